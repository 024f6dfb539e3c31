//! Automatic differentiation: reverse mode ([`vjp`], [`grad`],
//! [`value_and_grad`]) and forward mode ([`jvp`]), driven by each
//! primitive's `vjp` / `jvp` rule over the lazy graph the function builds.

use crate::array::Node;
use crate::primitive::Primitive;
use crate::primitives::grad::zeros as zeros_of;
use crate::trace_flag::{is_tracing, TraceGuard};
use crate::{Array, Error, Result};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// Fresh leaves for the primals: the graph `f` builds on them starts
/// exactly at these arrays. An evaluated primal outside a trace gets a new
/// array sharing its data; otherwise (a placeholder or a pending array, or
/// anything while tracing, where evaluating is not allowed) the leaf is a
/// Copy node of the primal, as MLX does, so the gradient graph stays
/// connected to the primal's own graph and can be traced and exported.
fn leaves(primals: &[Array]) -> Result<Vec<Array>> {
    let tracing = is_tracing();
    primals
        .iter()
        .map(|p| {
            if !tracing && p.is_ready() {
                Ok(Array::from_data(p.data()?, p.spec().clone()))
            } else {
                Array::from_primitive(crate::primitives::shape::Copy {}, vec![p.clone()])
            }
        })
        .collect()
}

/// Whether gradients stop at the node (`stop_gradient`).
fn stops_gradient(n: &Node) -> bool {
    n.primitive().name() == "StopGradient"
}

/// Calls `f` on `inputs` with evaluation forbidden (it would cut the graph).
fn call_traced<F>(f: &F, inputs: &[Array]) -> Result<Vec<Array>>
where
    F: Fn(&[Array]) -> Result<Vec<Array>>,
{
    let _guard = TraceGuard::enter();
    f(inputs)
}

/// Nodes between `inputs` and `outputs` that depend on some input (not
/// through a StopGradient), inputs before consumers. The walk does not go
/// above the inputs.
fn active_nodes(inputs: &[Array], outputs: &[Array]) -> Vec<Arc<Node>> {
    let mut order = Vec::new();
    let mut seen: HashSet<*const Node> = inputs
        .iter()
        .filter_map(|a| a.node().map(|(n, _)| Arc::as_ptr(&n)))
        .collect();
    let mut stack: Vec<(Arc<Node>, bool)> = outputs
        .iter()
        .filter_map(|a| a.node().map(|(n, _)| (n, false)))
        .collect();
    while let Some((n, expanded)) = stack.pop() {
        if expanded {
            order.push(n);
            continue;
        }
        if !seen.insert(Arc::as_ptr(&n)) {
            continue;
        }
        let ins = n.inputs();
        stack.push((n, true));
        for a in ins {
            if let Some((m, _)) = a.node() {
                if !seen.contains(&Arc::as_ptr(&m)) {
                    stack.push((m, false));
                }
            }
        }
    }
    // Keep only nodes downstream of an input.
    let mut active: HashSet<usize> = inputs.iter().map(Array::id).collect();
    order
        .into_iter()
        .filter(|n| {
            let hit = !stops_gradient(n) && n.inputs().iter().any(|a| active.contains(&a.id()));
            if hit {
                for o in n.outputs().into_iter().flatten() {
                    active.insert(o.id());
                }
            }
            hit
        })
        .collect()
}

fn accumulate(map: &mut HashMap<usize, Array>, a: &Array, v: Array) -> Result<()> {
    let v = if v.spec() != a.spec() {
        // Rules return cotangents of the input's dtype; cast defensively.
        crate::ops::astype(&v, a.dtype())?
    } else {
        v
    };
    let new = match map.remove(&a.id()) {
        Some(prev) => crate::ops::add(&prev, &v)?,
        None => v,
    };
    map.insert(a.id(), new);
    Ok(())
}

/// Outputs of `f` at `primals` and the cotangents of the primals given the
/// outputs' `cotangents` (vector-Jacobian product).
pub fn vjp<F>(f: F, primals: &[Array], cotangents: &[Array]) -> Result<(Vec<Array>, Vec<Array>)>
where
    F: Fn(&[Array]) -> Result<Vec<Array>>,
{
    vjp_with(f, primals, |_| Ok(cotangents.to_vec()))
}

/// [`vjp`] with the cotangents chosen after seeing the outputs.
fn vjp_with<F>(
    f: F,
    primals: &[Array],
    make_cotangents: impl FnOnce(&[Array]) -> Result<Vec<Array>>,
) -> Result<(Vec<Array>, Vec<Array>)>
where
    F: Fn(&[Array]) -> Result<Vec<Array>>,
{
    let inputs = leaves(primals)?;
    let outputs = call_traced(&f, &inputs)?;
    let cotangents = &make_cotangents(&outputs)?;
    if cotangents.len() != outputs.len() {
        return Err(Error::invalid(
            "vjp",
            format!(
                "{} cotangents for {} outputs",
                cotangents.len(),
                outputs.len()
            ),
        ));
    }
    let mut cot: HashMap<usize, Array> = HashMap::new();
    for (o, c) in outputs.iter().zip(cotangents) {
        if o.shape() != c.shape() {
            return Err(Error::invalid(
                "vjp",
                format!(
                    "cotangent of shape {:?} for an output of shape {:?}",
                    c.shape(),
                    o.shape()
                ),
            ));
        }
        accumulate(&mut cot, o, c.clone())?;
    }
    let nodes = active_nodes(&inputs, &outputs);
    let active: HashSet<usize> = inputs
        .iter()
        .map(Array::id)
        .chain(
            nodes
                .iter()
                .flat_map(|n| n.outputs().into_iter().flatten().map(|a| a.id())),
        )
        .collect();
    for n in nodes.iter().rev() {
        let outs = n.outputs();
        if !outs.iter().flatten().any(|o| cot.contains_key(&o.id())) {
            continue;
        }
        let out_arrays: Vec<Array> = outs
            .iter()
            .zip(n.specs())
            .map(|(o, s)| o.clone().map(Ok).unwrap_or_else(|| zeros_of(s)))
            .collect::<Result<_>>()?;
        let cots: Vec<Array> = outs
            .iter()
            .zip(n.specs())
            .map(|(o, s)| match o.as_ref().and_then(|o| cot.get(&o.id())) {
                Some(c) => Ok(c.clone()),
                None => zeros_of(s),
            })
            .collect::<Result<_>>()?;
        let ins = n.inputs();
        let argnums: Vec<usize> = (0..ins.len())
            .filter(|&i| active.contains(&ins[i].id()))
            .collect();
        if argnums.is_empty() {
            continue;
        }
        let grads = n.primitive().vjp(&ins, &cots, &argnums, &out_arrays)?;
        if grads.len() != argnums.len() {
            return Err(Error::unsupported(
                n.primitive().name(),
                format!(
                    "vjp returned {} cotangents for {} inputs",
                    grads.len(),
                    argnums.len()
                ),
            ));
        }
        for (&i, g) in argnums.iter().zip(grads) {
            accumulate(&mut cot, &ins[i], g)?;
        }
    }
    let grads = inputs
        .iter()
        .map(|i| match cot.remove(&i.id()) {
            Some(g) => Ok(g),
            None => zeros_of(i.spec()),
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((outputs, grads))
}

/// Outputs of `f` at `primals` and their tangents given the primals'
/// `tangents` (Jacobian-vector product).
pub fn jvp<F>(f: F, primals: &[Array], tangents: &[Array]) -> Result<(Vec<Array>, Vec<Array>)>
where
    F: Fn(&[Array]) -> Result<Vec<Array>>,
{
    if tangents.len() != primals.len() {
        return Err(Error::invalid(
            "jvp",
            format!("{} tangents for {} primals", tangents.len(), primals.len()),
        ));
    }
    let inputs = leaves(primals)?;
    let outputs = call_traced(&f, &inputs)?;
    let mut tan: HashMap<usize, Array> = HashMap::new();
    for (i, t) in inputs.iter().zip(tangents) {
        if i.shape() != t.shape() {
            return Err(Error::invalid(
                "jvp",
                format!(
                    "tangent of shape {:?} for a primal of shape {:?}",
                    t.shape(),
                    i.shape()
                ),
            ));
        }
        tan.insert(i.id(), t.clone());
    }
    for n in active_nodes(&inputs, &outputs) {
        let ins = n.inputs();
        let argnums: Vec<usize> = (0..ins.len())
            .filter(|&i| tan.contains_key(&ins[i].id()))
            .collect();
        let ts: Vec<Array> = argnums.iter().map(|&i| tan[&ins[i].id()].clone()).collect();
        let outs = n.primitive().jvp(&ins, &ts, &argnums)?;
        for (o, t) in n.outputs().into_iter().zip(outs) {
            if let Some(o) = o {
                tan.insert(o.id(), t);
            }
        }
    }
    let tangents_out = outputs
        .iter()
        .map(|o| match tan.get(&o.id()) {
            Some(t) => Ok(t.clone()),
            None => zeros_of(o.spec()),
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((outputs, tangents_out))
}

/// `f`'s outputs and the gradient of its first output (a scalar) with
/// respect to the inputs listed in `argnums`.
pub fn value_and_grad<F>(
    f: F,
    argnums: &[usize],
) -> impl Fn(&[Array]) -> Result<(Vec<Array>, Vec<Array>)>
where
    F: Fn(&[Array]) -> Result<Vec<Array>>,
{
    let argnums = argnums.to_vec();
    move |args: &[Array]| {
        if let Some(&bad) = argnums.iter().find(|&&i| i >= args.len()) {
            return Err(Error::invalid(
                "grad",
                format!("argnum {bad} is out of range for {} arguments", args.len()),
            ));
        }
        // Differentiate only the selected arguments; the rest are constants.
        let primals: Vec<Array> = argnums.iter().map(|&i| args[i].clone()).collect();
        let g = |sel: &[Array]| f(&with_selected(args, &argnums, sel));
        vjp_with(g, &primals, |outputs| {
            let first = outputs
                .first()
                .ok_or_else(|| Error::invalid("grad", "the function returned no outputs"))?;
            if first.size() != 1 {
                return Err(Error::invalid(
                    "grad",
                    format!(
                        "the function's first output must be a scalar, found shape {:?}",
                        first.shape()
                    ),
                ));
            }
            let mut cots = vec![crate::ops::reshape(
                &Array::scalar_of(1.0, first.dtype()),
                first.shape(),
            )?];
            for o in &outputs[1..] {
                cots.push(zeros_of(o.spec())?);
            }
            Ok(cots)
        })
    }
}

/// The gradient of `f`'s first output (a scalar) with respect to the inputs
/// listed in `argnums`.
pub fn grad<F>(f: F, argnums: &[usize]) -> impl Fn(&[Array]) -> Result<Vec<Array>>
where
    F: Fn(&[Array]) -> Result<Vec<Array>>,
{
    let vg = value_and_grad(f, argnums);
    move |args: &[Array]| vg(args).map(|(_, g)| g)
}

/// `primals` with the entries listed in `argnums` replaced by `sel`.
fn with_selected(primals: &[Array], argnums: &[usize], sel: &[Array]) -> Vec<Array> {
    let mut full = primals.to_vec();
    for (&i, a) in argnums.iter().zip(sel) {
        full[i] = a.clone();
    }
    full
}

/// `p`'s fallback graph on `inputs`, or `NotDifferentiable` naming `p`
/// when it has none.
fn fallback_of<P: Primitive + ?Sized>(p: &P, inputs: &[Array]) -> Result<Vec<Array>> {
    p.fallback(inputs)
        .unwrap_or_else(|| Err(Error::NotDifferentiable(p.name().to_string())))
}

/// The default [`Primitive::vjp`]: the vector-Jacobian product of `p`'s
/// fallback graph with respect to the inputs listed in `argnums`.
pub(crate) fn fallback_vjp<P: Primitive + ?Sized>(
    p: &P,
    primals: &[Array],
    cotangents: &[Array],
    argnums: &[usize],
) -> Result<Vec<Array>> {
    let sel: Vec<Array> = argnums.iter().map(|&i| primals[i].clone()).collect();
    let f = |s: &[Array]| fallback_of(p, &with_selected(primals, argnums, s));
    vjp(f, &sel, cotangents).map(|(_, g)| g)
}

/// The default [`Primitive::jvp`]: the Jacobian-vector product of `p`'s
/// fallback graph, given tangents of the inputs listed in `argnums`.
pub(crate) fn fallback_jvp<P: Primitive + ?Sized>(
    p: &P,
    primals: &[Array],
    tangents: &[Array],
    argnums: &[usize],
) -> Result<Vec<Array>> {
    let sel: Vec<Array> = argnums.iter().map(|&i| primals[i].clone()).collect();
    let f = |s: &[Array]| fallback_of(p, &with_selected(primals, argnums, s));
    jvp(f, &sel, tangents).map(|(_, t)| t)
}
