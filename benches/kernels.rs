//! Throughput of the reference kernels on representative layers, in GFLOP/s per kernel and
//! dtype (`cargo bench --bench kernels`). Single-threaded; each case reports the best of
//! several timed runs after a warm-up. FLOPs are the contracts' nominal counts
//! (2 × multiply-adds of the full loop nest, padding taps included), so skipped padding taps
//! count as work — the usual convention for conv benchmarks.

use std::error::Error;
use std::hint::black_box;
use std::time::{Duration, Instant};

use fuel_reference_backend::Element;
use fuel_reference_backend::RefTensor;
use fuel_reference_backend::ops::{
    Conv2dParams, ConvTranspose2dParams, MaxPool2dParams, conv_transpose2d, conv2d, max_pool2d,
};
use half::{bf16, f16};

#[path = "../tests/backend_util/mod.rs"]
mod util;

type BenchResult = Result<(), Box<dyn Error>>;

/// Deterministic pseudo-random values in [-1, 1).
fn tensor<T: Element>(shape: &[usize], seed: u64) -> Result<RefTensor<T>, Box<dyn Error>> {
    let n: usize = shape.iter().product();
    let mut s = seed | 1;
    let data = (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            T::from_f64((s >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0)
        })
        .collect();
    Ok(RefTensor::from_vec(data, shape)?)
}

/// Best wall time of `f` over runs totalling at least `budget` (at least 3 runs).
fn best_time(
    budget: Duration,
    mut f: impl FnMut() -> BenchResult,
) -> Result<Duration, Box<dyn Error>> {
    f()?;
    let start = Instant::now();
    let mut best = Duration::MAX;
    let mut runs = 0;
    while runs < 3 || start.elapsed() < budget {
        let t = Instant::now();
        f()?;
        best = best.min(t.elapsed());
        runs += 1;
    }
    Ok(best)
}

fn report(name: &str, dtype: &str, flops: f64, time: Duration) {
    let ms = time.as_secs_f64() * 1e3;
    let gflops = flops / time.as_secs_f64() / 1e9;
    println!("| {name:<46} | {dtype:<4} | {ms:>9.3} | {gflops:>7.2} |");
}

fn budget<T: Element>() -> Duration {
    // Half types compute through f32 per operation and are an order of magnitude slower.
    match T::DTYPE.size_bytes() {
        2 => Duration::from_millis(300),
        _ => Duration::from_millis(1500),
    }
}

fn conv_case<T: Element>(name: &str, x: [usize; 4], w: [usize; 4], p: Conv2dParams) -> BenchResult {
    let (xt, wt) = (tensor::<T>(&x, 1)?, tensor::<T>(&w, 2)?);
    let out = p.out_dims(&x, &w)?;
    let flops = 2.0 * (out.iter().product::<usize>() * w[1] * w[2] * w[3]) as f64;
    let time = best_time(budget::<T>(), || {
        black_box(conv2d(black_box(&xt), black_box(&wt), None, &p)?);
        Ok(())
    })?;
    report(name, T::DTYPE.suffix(), flops, time);
    Ok(())
}

fn conv_t_case<T: Element>(
    name: &str,
    x: [usize; 4],
    w: [usize; 4],
    p: ConvTranspose2dParams,
) -> BenchResult {
    let (xt, wt) = (tensor::<T>(&x, 3)?, tensor::<T>(&w, 4)?);
    let flops = 2.0 * (x.iter().product::<usize>() * w[1] * w[2] * w[3]) as f64;
    let time = best_time(budget::<T>(), || {
        black_box(conv_transpose2d(black_box(&xt), black_box(&wt), &p)?);
        Ok(())
    })?;
    report(name, T::DTYPE.suffix(), flops, time);
    Ok(())
}

fn pool_case<T: Element>(name: &str, x: [usize; 4], p: MaxPool2dParams) -> BenchResult {
    let xt = tensor::<T>(&x, 5)?;
    let out = p.out_dims(&x)?;
    let compares = (out.iter().product::<usize>() * p.kernel_size * p.kernel_size) as f64;
    let time = best_time(budget::<T>(), || {
        black_box(max_pool2d(black_box(&xt), &p)?);
        Ok(())
    })?;
    report(name, T::DTYPE.suffix(), compares, time);
    Ok(())
}

/// Asserts (once, untimed) that the timed f32 layers are bitwise the naive nested loops.
fn verify_bitwise(c: util::Case, transposed: bool) -> BenchResult {
    let (x, w) = (tensor::<f32>(&c.x, 1)?, tensor::<f32>(&c.w, 2)?);
    let (got, naive) = if transposed {
        let p = ConvTranspose2dParams {
            stride: c.stride,
            padding: c.padding,
            output_padding: c.output_padding,
            dilation: c.dilation,
            groups: c.groups,
        };
        (
            conv_transpose2d(&x, &w, &p)?,
            util::naive_conv_t(&c, x.data(), w.data()).0,
        )
    } else {
        let p = Conv2dParams {
            stride: c.stride,
            padding: c.padding,
            dilation: c.dilation,
            groups: c.groups,
        };
        (
            conv2d(&x, &w, None, &p)?,
            util::naive_conv2d(&c, x.data(), w.data(), None).0,
        )
    };
    let same = got
        .data()
        .iter()
        .zip(&naive)
        .all(|(a, b)| a.to_bits() == b.to_bits());
    if !same || got.data().len() != naive.len() {
        return Err(format!("{c:?}: kernel differs from the naive nested loop").into());
    }
    Ok(())
}

fn all_dtypes(f: &dyn Fn(u8) -> BenchResult) -> BenchResult {
    (0..4).try_for_each(f)
}

fn main() -> BenchResult {
    // `cargo bench` passes `--bench`; ignore arguments.
    let layer = |x, w, stride, padding, groups| util::Case {
        x,
        w,
        stride,
        padding,
        dilation: (1, 1),
        output_padding: (0, 0),
        groups,
    };
    verify_bitwise(
        layer([1, 64, 56, 56], [64, 64, 3, 3], (1, 1), (1, 1), 1),
        false,
    )?;
    verify_bitwise(
        layer([1, 64, 56, 56], [64, 1, 3, 3], (1, 1), (1, 1), 64),
        false,
    )?;
    verify_bitwise(
        layer([1, 64, 28, 28], [64, 32, 4, 4], (2, 2), (1, 1), 1),
        true,
    )?;
    println!(
        "f32 ResNet, depthwise and transposed layers: bitwise equal to the naive nested loops\n"
    );
    println!("| kernel / layer                                 | type |  best ms  | GFLOP/s |");
    println!("|------------------------------------------------|------|-----------|---------|");
    let resnet = Conv2dParams {
        padding: (1, 1),
        ..Conv2dParams::default()
    };
    let depthwise = Conv2dParams {
        padding: (1, 1),
        groups: 64,
        ..Conv2dParams::default()
    };
    let conv_t = ConvTranspose2dParams {
        stride: (2, 2),
        padding: (1, 1),
        ..ConvTranspose2dParams::default()
    };
    let pool = MaxPool2dParams {
        kernel_size: 3,
        stride: 2,
    };
    let x = [1, 64, 56, 56];
    all_dtypes(&|d| {
        let name = "conv2d ResNet 64->64 56x56 3x3 pad 1";
        match d {
            0 => conv_case::<f32>(name, x, [64, 64, 3, 3], resnet),
            1 => conv_case::<f64>(name, x, [64, 64, 3, 3], resnet),
            2 => conv_case::<bf16>(name, x, [64, 64, 3, 3], resnet),
            _ => conv_case::<f16>(name, x, [64, 64, 3, 3], resnet),
        }
    })?;
    all_dtypes(&|d| {
        let name = "conv2d depthwise 64 ch 56x56 3x3 pad 1";
        match d {
            0 => conv_case::<f32>(name, x, [64, 1, 3, 3], depthwise),
            1 => conv_case::<f64>(name, x, [64, 1, 3, 3], depthwise),
            2 => conv_case::<bf16>(name, x, [64, 1, 3, 3], depthwise),
            _ => conv_case::<f16>(name, x, [64, 1, 3, 3], depthwise),
        }
    })?;
    let xt = [1, 64, 28, 28];
    all_dtypes(&|d| {
        let name = "conv_transpose2d 64->32 28x28->56x56 4x4 s2 p1";
        match d {
            0 => conv_t_case::<f32>(name, xt, [64, 32, 4, 4], conv_t),
            1 => conv_t_case::<f64>(name, xt, [64, 32, 4, 4], conv_t),
            2 => conv_t_case::<bf16>(name, xt, [64, 32, 4, 4], conv_t),
            _ => conv_t_case::<f16>(name, xt, [64, 32, 4, 4], conv_t),
        }
    })?;
    let xp = [1, 64, 112, 112];
    all_dtypes(&|d| {
        let name = "max_pool2d 64 ch 112x112 k3 s2 (G compares/s)";
        match d {
            0 => pool_case::<f32>(name, xp, pool),
            1 => pool_case::<f64>(name, xp, pool),
            2 => pool_case::<bf16>(name, xp, pool),
            _ => pool_case::<f16>(name, xp, pool),
        }
    })?;
    Ok(())
}
