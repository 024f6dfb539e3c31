//! Broadcasting ops: `broadcast_to`, `broadcast_arrays` and its form that
//! leaves some trailing axes alone (used by matmul-like and gather ops).

use crate::primitives::shape::{Broadcast, BroadcastAxes};
use crate::shape::broadcast_shapes;
use crate::trace_flag::is_shapeless_tracing;
use crate::{Array, Error, Result};

/// `a` broadcast to `shape` (numpy rules).
pub fn broadcast_to(a: &Array, shape: &[i32]) -> Result<Array> {
    if let Some(&d) = shape.iter().find(|&&d| d < 0) {
        return Err(Error::invalid(
            "broadcast_to",
            format!("negative dimension {d} in shape {shape:?}"),
        ));
    }
    if a.shape() == shape {
        return Ok(a.clone());
    }
    Array::from_primitive(
        Broadcast {
            shape: shape.to_vec(),
        },
        vec![a.clone()],
    )
}

/// `a` broadcast to the shape of `like`. In a shapeless trace the node
/// takes `like` as an extra input, so a replay at other shapes broadcasts
/// to `like`'s new shape instead of the traced one (derivative rules use
/// this to spread a cotangent back over an input).
pub(crate) fn broadcast_like(a: &Array, like: &Array) -> Result<Array> {
    if !is_shapeless_tracing() {
        return broadcast_to(a, like.shape());
    }
    let shape = broadcast_shapes("broadcast_like", a.shape(), like.shape())?;
    Array::from_primitive(Broadcast { shape }, vec![a.clone(), like.clone()])
}

/// The arrays broadcast against each other (each is unchanged when it
/// already has the common shape).
pub fn broadcast_arrays(arrays: &[Array]) -> Result<Vec<Array>> {
    broadcast_together("broadcast_arrays", arrays, &[])
}

/// The arrays broadcast against each other except on the trailing axes
/// `ignore_axes` (negative, ascending, e.g. `[-2, -1]`), where each keeps its
/// own sizes (for `[-2, -1]`: the batch axes of a batched matrix product).
pub fn broadcast_arrays_ignoring(arrays: &[Array], ignore_axes: &[i32]) -> Result<Vec<Array>> {
    broadcast_together("broadcast_arrays", arrays, ignore_axes)
}

/// [`broadcast_arrays_ignoring`] with `op` named in errors.
///
/// Outside a shapeless trace an array that needs it gets a Broadcast to the
/// fixed common shape. In a shapeless trace every array gets a node whose
/// other inputs are the arrays it broadcasts against (Broadcast, or
/// BroadcastAxes when axes are ignored), so a replay at other shapes
/// recomputes the common shape, as MLX's dynamic mode does.
pub(crate) fn broadcast_together(op: &str, arrays: &[Array], ignore: &[i32]) -> Result<Vec<Array>> {
    if arrays.len() <= 1 {
        return Ok(arrays.to_vec());
    }
    check_ignored_axes(op, arrays, ignore)?;
    // Each array without its ignored axes (counted from its end)...
    let kept = |a: &Array| -> Vec<i32> {
        let n = a.ndim() as i32;
        (0..n)
            .filter(|&i| !ignore.contains(&(i - n)))
            .map(|i| a.shape()[i as usize])
            .collect()
    };
    let mut common: Vec<i32> = Vec::new();
    for a in arrays {
        common = broadcast_shapes(op, &common, &kept(a))?;
    }
    // ...and the common shape with each array's own sizes put back there.
    let target = |a: &Array| -> Vec<i32> {
        let mut s = common.clone();
        let dims = (s.len() + ignore.len()) as i32;
        for &ax in ignore {
            s.insert(
                (dims + ax) as usize,
                a.shape()[(a.ndim() as i32 + ax) as usize],
            );
        }
        s
    };
    let shapeless = is_shapeless_tracing();
    let mut out = Vec::with_capacity(arrays.len());
    for (i, a) in arrays.iter().enumerate() {
        let shape = target(a);
        if !shapeless {
            out.push(if a.shape() == shape.as_slice() {
                a.clone()
            } else {
                Array::from_primitive(Broadcast { shape }, vec![a.clone()])?
            });
            continue;
        }
        let mut inputs = vec![a.clone()];
        inputs.extend(
            arrays
                .iter()
                .enumerate()
                .filter(|&(j, _)| j != i)
                .map(|(_, b)| b.clone()),
        );
        out.push(if ignore.is_empty() {
            Array::from_primitive(Broadcast { shape }, inputs)?
        } else {
            let ignore_axes = ignore.to_vec();
            Array::from_primitive(BroadcastAxes { ignore_axes }, inputs)?
        });
    }
    Ok(out)
}

/// The ignored axes must be negative and ascending, and every array must
/// have them.
fn check_ignored_axes(op: &str, arrays: &[Array], ignore: &[i32]) -> Result<()> {
    let ascending = ignore.windows(2).all(|w| w[0] < w[1]);
    if !ascending || ignore.iter().any(|&ax| ax >= 0) {
        return Err(Error::invalid(
            op,
            format!("axes to leave alone must be negative and ascending, e.g. [-2, -1], found {ignore:?}"),
        ));
    }
    let deepest = ignore.first().map_or(0, |&ax| (-ax) as usize);
    if let Some(a) = arrays.iter().find(|a| a.ndim() < deepest) {
        return Err(Error::invalid(
            op,
            format!(
                "cannot leave axes {ignore:?} alone in an array of shape {:?}",
                a.shape()
            ),
        ));
    }
    Ok(())
}
