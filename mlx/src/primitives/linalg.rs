//! Matrix products: [`Matmul`] and [`AddMM`]. Ops promote dtypes and
//! broadcast the batch axes with explicit nodes before these run, as MLX
//! does; the primitives also broadcast batch axes themselves so that
//! hand-written files work.

use super::expect_inputs;
use super::grad::{unbroadcast, zeros};
use crate::backend::cpu::matmul::{addmm, MatrixView};
use crate::primitive::Spec;
use crate::primitives::shape::broadcast_view;
use crate::{ops, Array, Data, Error, Primitive, Result};

/// `a @ b` over the last two axes; leading axes are batch axes.
#[derive(Debug, Clone, Default, PartialEq, crate::Primitive)]
#[primitive(mlx)]
pub struct Matmul {}

/// `alpha * (a @ b) + beta * c`; `c` broadcasts to the product's shape.
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
#[primitive(mlx)]
pub struct AddMM {
    #[state]
    pub alpha: f32,
    #[state]
    pub beta: f32,
}

/// Output spec of `a @ b`: batch axes broadcast, then (rows of a, cols of b).
fn product_spec(name: &str, a: &Spec, b: &Spec) -> Result<Spec> {
    if a.dtype != b.dtype {
        return Err(Error::invalid(
            name,
            format!(
                "inputs must share a dtype, found {} and {}",
                a.dtype, b.dtype
            ),
        ));
    }
    if !a.dtype.is_inexact() {
        return Err(Error::invalid(
            name,
            format!(
                "expected a floating point or complex dtype, found {}",
                a.dtype
            ),
        ));
    }
    let (na, nb) = (a.shape.len(), b.shape.len());
    if na < 2 || nb < 2 {
        return Err(Error::invalid(
            name,
            format!(
                "inputs must have at least 2 dimensions, found shapes {:?} and {:?}",
                a.shape, b.shape
            ),
        ));
    }
    if a.shape[na - 1] != b.shape[nb - 2] {
        return Err(Error::invalid(
            name,
            format!(
                "last dimension of the first input with shape {:?} must match the \
                 second to last dimension of the second input with shape {:?}",
                a.shape, b.shape
            ),
        ));
    }
    let mut shape = crate::shape::broadcast_shapes(name, &a.shape[..na - 2], &b.shape[..nb - 2])?;
    shape.push(a.shape[na - 2]);
    shape.push(b.shape[nb - 1]);
    Ok(Spec::new(shape, a.dtype))
}

/// `x` viewed with its batch axes broadcast to `batch`.
fn batch_view(x: &Array, batch: &[i32]) -> Result<Array> {
    let nd = x.ndim();
    let mut shape = batch.to_vec();
    shape.extend_from_slice(&x.shape()[nd - 2..]);
    broadcast_view(x, &shape)
}

/// Runs the product with every operand viewed at the output's batch shape.
fn eval_product(
    inputs: &[Array],
    c: Option<&Array>,
    alpha: f32,
    beta: f32,
    out: &Spec,
) -> Result<Data> {
    let batch = &out.shape[..out.shape.len() - 2];
    let a = batch_view(&inputs[0], batch)?;
    let b = batch_view(&inputs[1], batch)?;
    let c = c.map(|c| broadcast_view(c, &out.shape)).transpose()?;
    let (da, db) = (a.data()?, b.data()?);
    let dc = c.as_ref().map(|c| c.data()).transpose()?;
    addmm(
        MatrixView {
            data: &da,
            shape: a.shape(),
        },
        MatrixView {
            data: &db,
            shape: b.shape(),
        },
        dc.as_ref().map(|d| MatrixView {
            data: d,
            shape: &out.shape,
        }),
        alpha,
        beta,
        out.dtype,
        &out.shape,
    )
}

impl Primitive for Matmul {
    fn work(&self, inputs: &[Spec], outputs: &[Spec]) -> u64 {
        crate::primitive::product_work(inputs, outputs)
    }
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        expect_inputs("Matmul", inputs, 2)?;
        Ok(vec![product_spec("Matmul", &inputs[0], &inputs[1])?])
    }
    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        Ok(vec![eval_product(inputs, None, 1.0, 0.0, &out[0])?])
    }
    fn vjp(&self, p: &[Array], c: &[Array], argnums: &[usize], _: &[Array]) -> Result<Vec<Array>> {
        product_vjp(p, &c[0], argnums, 1.0, 1.0)
    }
    fn jvp(&self, p: &[Array], t: &[Array], argnums: &[usize]) -> Result<Vec<Array>> {
        product_jvp(self, p, t, argnums, 1.0, 1.0)
    }
}

/// `x` times `k` in `x`'s dtype (no node when `k` is 1).
fn scaled(x: Array, k: f32) -> Result<Array> {
    if k == 1.0 {
        return Ok(x);
    }
    ops::multiply(&x, &Array::scalar_of(k as f64, x.dtype()))
}

/// The conjugate transpose of the last two axes.
fn adjoint(x: &Array) -> Result<Array> {
    ops::swapaxes(&ops::conjugate(x)?, -1, -2)
}

/// vjp of `alpha * a @ b + beta * c` (inputs a, b and optionally c):
/// `alpha * cot @ b^H`, `alpha * a^H @ cot`, `beta * cot`, each summed
/// over the axes its input was broadcast along.
fn product_vjp(
    p: &[Array],
    cot: &Array,
    argnums: &[usize],
    alpha: f32,
    beta: f32,
) -> Result<Vec<Array>> {
    argnums
        .iter()
        .map(|&i| {
            let g = match i {
                0 => scaled(ops::matmul(cot, &adjoint(&p[1])?)?, alpha)?,
                1 => scaled(ops::matmul(&adjoint(&p[0])?, cot)?, alpha)?,
                _ => scaled(cot.clone(), beta)?,
            };
            unbroadcast(g, p[i].shape(), p[i].dtype())
        })
        .collect()
}

/// jvp of `alpha * a @ b + beta * c`: the product rule.
fn product_jvp(
    prim: &dyn Primitive,
    p: &[Array],
    t: &[Array],
    argnums: &[usize],
    alpha: f32,
    beta: f32,
) -> Result<Vec<Array>> {
    let specs: Vec<Spec> = p.iter().map(|a| a.spec().clone()).collect();
    let out = prim.output_specs(&specs)?.remove(0);
    let mut acc = zeros(&out)?;
    for (t, &i) in t.iter().zip(argnums) {
        let t = ops::cast_to(t, p[i].dtype())?;
        let term = match i {
            0 => scaled(ops::matmul(&t, &p[1])?, alpha)?,
            1 => scaled(ops::matmul(&p[0], &t)?, alpha)?,
            _ => scaled(t, beta)?,
        };
        acc = ops::add(&acc, &term)?;
    }
    Ok(vec![ops::cast_to(&acc, out.dtype)?])
}

impl Primitive for AddMM {
    fn work(&self, inputs: &[Spec], outputs: &[Spec]) -> u64 {
        crate::primitive::product_work(inputs, outputs)
    }
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        expect_inputs("AddMM", inputs, 3)?;
        let spec = product_spec("AddMM", &inputs[0], &inputs[1])?;
        let c = &inputs[2];
        if c.dtype != spec.dtype {
            return Err(Error::invalid(
                "AddMM",
                format!(
                    "c must have the product's dtype {}, found {}",
                    spec.dtype, c.dtype
                ),
            ));
        }
        let b = crate::shape::broadcast_shapes("AddMM", &c.shape, &spec.shape)?;
        if b != spec.shape {
            return Err(Error::invalid(
                "AddMM",
                format!(
                    "c with shape {:?} does not broadcast to the product's shape {:?}",
                    c.shape, spec.shape
                ),
            ));
        }
        Ok(vec![spec])
    }
    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        Ok(vec![eval_product(
            inputs,
            Some(&inputs[2]),
            self.alpha,
            self.beta,
            &out[0],
        )?])
    }
    fn vjp(&self, p: &[Array], c: &[Array], argnums: &[usize], _: &[Array]) -> Result<Vec<Array>> {
        product_vjp(p, &c[0], argnums, self.alpha, self.beta)
    }
    fn jvp(&self, p: &[Array], t: &[Array], argnums: &[usize]) -> Result<Vec<Array>> {
        product_jvp(self, p, t, argnums, self.alpha, self.beta)
    }
}
