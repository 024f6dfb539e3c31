//! [`RandomBits`]: counter-based random bits from threefry-2x32 keys, laid
//! out exactly as MLX lays them out (so samples are bit-identical).

use super::expect_inputs;
use crate::buffer::Buffer;
use crate::primitive::Spec;
use crate::{Array, Data, Dtype, Error, Primitive, Result};
use rayon::prelude::*;

/// Random bits of `width` bytes per element (uint8/uint16/uint32 for
/// 1/2/4) for every key of the input: input uint32 keys of shape
/// (…, 2); output shape = key batch dims ++ `shape`.
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
#[primitive(mlx)]
pub struct RandomBits {
    #[state]
    pub shape: Vec<i32>,
    #[state]
    pub width: i32,
}

/// The output dtype for a bit width in bytes.
pub(crate) fn bits_dtype(op: &str, width: i32) -> Result<Dtype> {
    match width {
        1 => Ok(Dtype::Uint8),
        2 => Ok(Dtype::Uint16),
        4 => Ok(Dtype::Uint32),
        w => Err(Error::invalid(
            op,
            format!("bit width must be 1, 2 or 4 bytes, found {w}"),
        )),
    }
}

impl Primitive for RandomBits {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        expect_inputs("RandomBits", inputs, 1)?;
        let key = &inputs[0];
        if key.dtype != Dtype::Uint32 || key.shape.last() != Some(&2) {
            return Err(Error::invalid(
                "RandomBits",
                format!(
                    "keys must be uint32 of shape (..., 2), found {} {:?}",
                    key.dtype, key.shape
                ),
            ));
        }
        crate::array::check_shape("RandomBits", &self.shape)?;
        let dtype = bits_dtype("RandomBits", self.width)?;
        let mut shape = key.shape[..key.shape.len() - 1].to_vec();
        shape.extend_from_slice(&self.shape);
        crate::array::check_shape("RandomBits", &shape)?;
        Ok(vec![Spec::new(shape, dtype)])
    }

    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        let key = &inputs[0];
        let keys = crate::backend::cpu::copy::to_contiguous_vec::<u32>(&key.data()?, key.shape());
        let per_key: usize =
            self.width as usize * self.shape.iter().map(|&d| d as usize).product::<usize>();
        let mut buf = Buffer::zeroed(out[0].size() * out[0].dtype.size());
        let bytes = buf.bytes_mut().expect("heap buffer");
        if per_key > 0 {
            bytes
                .par_chunks_mut(per_key)
                .zip(keys.par_chunks(2))
                .for_each(|(dst, k)| fill_bits((k[0], k[1]), dst));
        }
        Ok(vec![Data::contiguous(buf, &out[0].shape)])
    }
}

/// Threefry-2x32 with 20 rounds (the Random123 / JAX variant) of the
/// counter `x` under `key`.
pub fn threefry2x32(key: (u32, u32), x: (u32, u32)) -> (u32, u32) {
    const ROT: [[u32; 4]; 2] = [[13, 15, 26, 6], [17, 29, 16, 24]];
    let ks = [key.0, key.1, key.0 ^ key.1 ^ 0x1BD1_1BDA];
    let (mut x0, mut x1) = (x.0.wrapping_add(ks[0]), x.1.wrapping_add(ks[1]));
    for i in 0..5usize {
        for r in ROT[i % 2] {
            x0 = x0.wrapping_add(x1);
            x1 = x1.rotate_left(r) ^ x0;
        }
        x0 = x0.wrapping_add(ks[(i + 1) % 3]);
        x1 = x1.wrapping_add(ks[(i + 2) % 3]).wrapping_add(i as u32 + 1);
    }
    (x0, x1)
}

/// Fills `dst` with the bits of one key: W = ceil(len / 4) words, word i
/// and word i + ceil(W/2) come from the counter (i, i + ceil(W/2)); an odd
/// middle word from (W/2, 0); the little-endian byte image is cut to `len`.
pub fn fill_bits(key: (u32, u32), dst: &mut [u8]) {
    let words = dst.len().div_ceil(4);
    let half = words / 2;
    let odd = words % 2;
    let mut put = |w: usize, v: u32| {
        let start = w * 4;
        let end = (start + 4).min(dst.len());
        dst[start..end].copy_from_slice(&v.to_le_bytes()[..end - start]);
    };
    for i in 0..half {
        let (a, b) = threefry2x32(key, (i as u32, (i + half + odd) as u32));
        put(i, a);
        put(i + half + odd, b);
    }
    if odd == 1 {
        put(half, threefry2x32(key, (half as u32, 0)).0);
    }
}
