//! Products with weights in MLX's microscaling float modes: mxfp4 (e2m1
//! values, a power-of-two e8m0 scale per 32), mxfp8 (e4m3 values, the same
//! scales) and nvfp4 (e2m1 values, an e4m3 scale per 16). Values are packed
//! into uint32 words from the low bits up, as the affine modes' are (read
//! with [`get_bits`]), and scales are one byte each.
//!
//! The sums follow MLX's CPU kernels step by step, each operation rounded
//! to the activations' dtype (`round`): for `x @ W.T`, per output a sum
//! per group in k order, scaled and added to the running total; for
//! `x @ W`, per k the scaled `x` value times each weight added to every
//! output.

use super::quantized::{get_bits, QParams};

/// e2m1 values by their 4-bit code.
const FP4: [f32; 16] = [
    0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0,
];

/// An e4m3 byte as MLX reads it: the low 7 bits placed in a float16's
/// exponent and significand, times 256 (so 0x7F reads as 480, not NaN).
pub fn from_fp8(b: u8) -> f32 {
    let h = half::f16::from_bits(((b & 0x7F) as u16) << 7);
    let v = super::num::f16_to_f32(h) * 256.0;
    if b & 0x80 != 0 {
        -v
    } else {
        v
    }
}

/// A group's scale: e4m3 for groups of 16 (nvfp4), else e8m0 read as the
/// bfloat16 `s << 7` (2^(s - 127); 0 reads as 2^-127, 255 as infinity).
fn scale(group: usize, s: u8) -> f32 {
    if group == 16 {
        from_fp8(s)
    } else {
        let bits = if s == 0 { 0x40 } else { (s as u16) << 7 };
        half::bf16::from_bits(bits).to_f32()
    }
}

/// One quantized matrix of `rows x cols` values (row-major, `cols / group`
/// scales a row).
pub struct FpMatrix<'a> {
    pub words: &'a [u32],
    pub scales: &'a [u8],
    pub bits: usize,
    pub group: usize,
    pub rows: usize,
    pub cols: usize,
}

impl FpMatrix<'_> {
    /// Value `j` of the row-major order.
    fn value(&self, j: usize) -> f32 {
        let code = get_bits(self.words, j * self.bits, self.bits);
        if self.bits == 8 {
            from_fp8(code as u8)
        } else {
            FP4[code as usize]
        }
    }

    fn scale(&self, row: usize, g: usize) -> f32 {
        scale(self.group, self.scales[row * (self.cols / self.group) + g])
    }
}

/// `count` quantized matrices of `rows x cols` stored one after another
/// (a batch of weights, or a layer's experts).
pub struct FpStack {
    words: Vec<u32>,
    scales: Vec<u8>,
    count: usize,
    bits: usize,
    group: usize,
    rows: usize,
    cols: usize,
}

impl FpStack {
    pub fn new(
        words: Vec<u32>,
        scales: Vec<u8>,
        count: usize,
        p: QParams,
        (rows, cols): (usize, usize),
    ) -> FpStack {
        FpStack {
            words,
            scales,
            count: count.max(1),
            bits: p.bits,
            group: p.group_size,
            rows,
            cols,
        }
    }

    /// Matrix `i`.
    pub fn matrix(&self, i: usize) -> FpMatrix<'_> {
        let (pw, sw) = (
            self.words.len() / self.count,
            self.scales.len() / self.count,
        );
        FpMatrix {
            words: &self.words[i * pw..(i + 1) * pw],
            scales: &self.scales[i * sw..(i + 1) * sw],
            bits: self.bits,
            group: self.group,
            rows: self.rows,
            cols: self.cols,
        }
    }
}

/// `out (m x n) = x (m x k) @ W.T` for `W` of `n x k` (`transpose`), or
/// `x @ W` for `W` of `k x n`, with every step rounded by `round`.
pub fn fp_qmm(
    x: &[f32],
    m: usize,
    w: &FpMatrix<'_>,
    transpose: bool,
    round: fn(f32) -> f32,
    out: &mut [f32],
) {
    let (k, n) = if transpose {
        (w.cols, w.rows)
    } else {
        (w.rows, w.cols)
    };
    for (xr, or) in x
        .chunks_exact(k.max(1))
        .zip(out.chunks_exact_mut(n.max(1)))
        .take(m)
    {
        if transpose {
            for (j, o) in or.iter_mut().enumerate() {
                let mut sum = 0f32;
                for g in 0..k / w.group {
                    let s = round(w.scale(j, g));
                    let mut gsum = 0f32;
                    let at = g * w.group;
                    for (i, &xi) in xr.iter().enumerate().skip(at).take(w.group) {
                        gsum = round(gsum + round(xi * w.value(j * k + i)));
                    }
                    sum = round(sum + round(s * gsum));
                }
                *o = sum;
            }
        } else {
            or.fill(0.0);
            for (i, &xi) in xr.iter().enumerate() {
                for (g, og) in or.chunks_mut(w.group).enumerate() {
                    let xs = round(xi * round(w.scale(i, g)));
                    for (jj, o) in og.iter_mut().enumerate() {
                        *o = round(*o + round(xs * w.value(i * n + g * w.group + jj)));
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// e4m3 as OCP defines it (bias 7, subnormals below 2^-6), except
    /// MLX's reading of the all-ones code as 480.
    #[test]
    fn e4m3_bytes_read_as_mlx_reads_them() {
        for b in 0..=255u8 {
            let (e, m) = (((b >> 3) & 0xF) as i32, (b & 7) as f32);
            let mag = if e == 0 {
                m / 8.0 * 2f32.powi(-6)
            } else {
                (1.0 + m / 8.0) * 2f32.powi(e - 7)
            };
            let want = if b & 0x80 != 0 { -mag } else { mag };
            assert_eq!(from_fp8(b).to_bits(), want.to_bits(), "{b:#04x}");
        }
        assert_eq!(from_fp8(0x7F), 480.0);
    }

    #[test]
    fn e8m0_scales_are_powers_of_two() {
        assert_eq!(scale(32, 127), 1.0);
        assert_eq!(scale(32, 130), 8.0);
        assert_eq!(scale(32, 0), 2f32.powi(-127));
        assert_eq!(scale(32, 255), f32::INFINITY);
        assert_eq!(scale(16, 0x38), 1.0);
    }
}
