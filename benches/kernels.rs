//! Throughput of the reference kernels on representative layers, in GFLOP/s per kernel and
//! dtype (`cargo bench --bench kernels`), on one thread and on two; each case reports the best
//! of several timed runs after a warm-up. FLOPs are the contracts' nominal counts
//! (2 × multiply-adds of the full loop nest, padding taps included), so skipped padding taps
//! count as work — the usual convention for conv benchmarks.
//!
//! The peer: in the same run, `benches/peer_onnxruntime.py` times onnxruntime's f32 CPU kernels
//! on the same four layers on one thread, and the one-thread table shows its figure beside
//! ours. Without Python or onnxruntime the bench says why and goes on without the column
//! (`PEER_PYTHON` names the interpreter, `python3` by default).

use std::collections::HashMap;
use std::error::Error;
use std::hint::black_box;
use std::process::Command;
use std::time::{Duration, Instant};

use fuel_reference_backend::Element;
use fuel_reference_backend::RefTensor;
use fuel_reference_backend::ops::{
    Conv2dParams, ConvTranspose2dParams, MaxPool2dParams, conv_transpose2d,
    conv_transpose2d_threaded, conv2d, conv2d_threaded, max_pool2d, max_pool2d_threaded,
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

/// The machine's non-FMA peak for one core: `lanes × 2 FLOP per cycle × clock`, i.e. one
/// vector multiply and one vector add retired per cycle (two FP ports, each able to take
/// either; an FMA would count twice but breaks bitwise equality). `lanes` is the vector width
/// of the widest ISA the kernels dispatch to at runtime (AVX-512: 16 f32 / 8 f64, AVX2: 8 / 4,
/// otherwise 1: pulp's scalar path). Half types compute in f32 lanes.
#[derive(Clone, Copy)]
struct Peak {
    isa: &'static str,
    f32_lanes: f64,
    clock_ghz: f64,
}

impl Peak {
    fn detect() -> Peak {
        let (isa, f32_lanes) = if std::arch::is_x86_feature_detected!("avx512f") {
            ("AVX-512", 16.0)
        } else if std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("fma")
        {
            ("AVX2", 8.0)
        } else {
            ("scalar", 1.0)
        };
        Peak {
            isa,
            f32_lanes,
            clock_ghz: measure_clock_ghz(),
        }
    }

    /// Peak GFLOP/s for an element of `bytes` bytes.
    fn gflops(&self, bytes: usize) -> f64 {
        let lanes = if bytes == 8 {
            self.f32_lanes / 2.0
        } else {
            self.f32_lanes
        };
        lanes * 2.0 * self.clock_ghz
    }
}

/// The core clock, from a chain of dependent rotate-and-xor steps, `x = rotl(x, 13) ^ x`: the
/// xor needs the rotate's result, and both have a 1-cycle latency on every x86 core of the
/// last decade, so the chain runs at exactly one step per 2 cycles (and no compiler folds it
/// into a closed form). Best of several runs.
fn measure_clock_ghz() -> f64 {
    const N: u64 = 100_000_000;
    let mut best = f64::MAX;
    for _ in 0..5 {
        let t = Instant::now();
        let mut x = black_box(0x9e37_79b9_7f4a_7c15u64);
        for _ in 0..N / 4 {
            x ^= x.rotate_left(13);
            x ^= x.rotate_left(13);
            x ^= x.rotate_left(13);
            x ^= x.rotate_left(13);
        }
        black_box(x);
        best = best.min(t.elapsed().as_secs_f64());
    }
    2.0 * N as f64 / best / 1e9
}

/// Whether a layer is selected: `KERNELS_FILTER=depthwise` (a substring of the layer name)
/// runs, checks and times only the matching layers; unset, everything runs.
fn wanted(name: &str) -> bool {
    std::env::var("KERNELS_FILTER").map_or(true, |f| name.contains(f.as_str()))
}

/// One row: our time and rate, the fraction of the peak, and, in the one-thread table of a
/// run with the peer, onnxruntime's rate on the same layer (f32 rows; `-` elsewhere).
fn report(name: &str, dtype: &str, flops: f64, time: Duration, peak: Option<f64>) {
    let ms = time.as_secs_f64() * 1e3;
    let gflops = flops / time.as_secs_f64() / 1e9;
    let frac = match peak {
        Some(p) => format!("{:>5.1} %", 100.0 * gflops / p),
        None => "      -".to_string(),
    };
    let peer = PEER.with(|p| match &*p.borrow() {
        None => None,
        Some(figures) if dtype == "f32" && THREADS.with(|t| t.get()) == 1 => Some(
            peer_key(name)
                .and_then(|k| figures.get(k))
                .map_or("-".to_string(), |ms| format!("{:.2}", flops / ms / 1e6)),
        ),
        Some(_) => Some("-".to_string()),
    });
    match peer {
        Some(peer) => {
            println!("| {name:<46} | {dtype:<4} | {ms:>9.3} | {gflops:>7.2} | {frac} | {peer:>9} |")
        }
        None => println!("| {name:<46} | {dtype:<4} | {ms:>9.3} | {gflops:>7.2} | {frac} |"),
    }
}

/// The peer script's key for a layer of the table.
fn peer_key(name: &str) -> Option<&'static str> {
    [
        ("conv2d ResNet", "resnet"),
        ("conv2d depthwise", "depthwise"),
        ("conv_transpose2d", "conv_transpose"),
        ("max_pool2d", "max_pool"),
    ]
    .into_iter()
    .find(|(prefix, _)| name.starts_with(prefix))
    .map(|(_, key)| key)
}

/// Runs `benches/peer_onnxruntime.py` (one thread): its best milliseconds per layer key, or
/// why there are none.
fn run_peer() -> Result<(String, HashMap<String, f64>), String> {
    let python = std::env::var("PEER_PYTHON").unwrap_or_else(|_| "python3".to_string());
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/peer_onnxruntime.py");
    let output = Command::new(&python)
        .arg(script)
        .arg("1")
        .output()
        .map_err(|e| format!("cannot run {python}: {e}"))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let reason = stderr
            .lines()
            .last()
            .unwrap_or("no message")
            .trim()
            .to_string();
        return Err(format!("{python} {script}: {}: {reason}", output.status));
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let mut lines = stdout.lines();
    let version = lines.next().unwrap_or_default().trim().to_string();
    let mut figures = HashMap::new();
    for line in lines {
        let parsed = line
            .split_once(' ')
            .and_then(|(key, ms)| Some((key.to_string(), ms.trim().parse::<f64>().ok()?)));
        let (key, ms) = parsed.ok_or_else(|| format!("unreadable peer line {line:?}"))?;
        figures.insert(key, ms);
    }
    Ok((version, figures))
}

fn budget<T: Element>() -> Duration {
    match T::DTYPE.size_bytes() {
        2 => Duration::from_millis(500),
        _ => Duration::from_millis(1000),
    }
}

thread_local! {
    static PEAK: std::cell::Cell<Option<Peak>> = const { std::cell::Cell::new(None) };
    static THREADS: std::cell::Cell<usize> = const { std::cell::Cell::new(1) };
    /// The peer's best milliseconds per layer key, when the peer ran.
    static PEER: std::cell::RefCell<Option<HashMap<String, f64>>> =
        const { std::cell::RefCell::new(None) };
}

fn peak_for<T: Element>() -> Option<f64> {
    PEAK.with(|p| p.get())
        .map(|p| p.gflops(T::DTYPE.size_bytes()) * THREADS.with(|t| t.get()) as f64)
}

fn conv_case<T: Element>(name: &str, x: [usize; 4], w: [usize; 4], p: Conv2dParams) -> BenchResult {
    if !wanted(name) {
        return Ok(());
    }
    let (xt, wt) = (tensor::<T>(&x, 1)?, tensor::<T>(&w, 2)?);
    let out = p.out_dims(&x, &w)?;
    let flops = 2.0 * (out.iter().product::<usize>() * w[1] * w[2] * w[3]) as f64;
    let threads = THREADS.with(|t| t.get());
    let time = best_time(budget::<T>(), || {
        black_box(conv2d_threaded(
            black_box(&xt),
            black_box(&wt),
            None,
            &p,
            threads,
        )?);
        Ok(())
    })?;
    report(name, T::DTYPE.suffix(), flops, time, peak_for::<T>());
    Ok(())
}

fn conv_t_case<T: Element>(
    name: &str,
    x: [usize; 4],
    w: [usize; 4],
    p: ConvTranspose2dParams,
) -> BenchResult {
    if !wanted(name) {
        return Ok(());
    }
    let (xt, wt) = (tensor::<T>(&x, 3)?, tensor::<T>(&w, 4)?);
    let flops = 2.0 * (x.iter().product::<usize>() * w[1] * w[2] * w[3]) as f64;
    let threads = THREADS.with(|t| t.get());
    let time = best_time(budget::<T>(), || {
        black_box(conv_transpose2d_threaded(
            black_box(&xt),
            black_box(&wt),
            &p,
            threads,
        )?);
        Ok(())
    })?;
    report(name, T::DTYPE.suffix(), flops, time, peak_for::<T>());
    Ok(())
}

fn pool_case<T: Element>(name: &str, x: [usize; 4], p: MaxPool2dParams) -> BenchResult {
    if !wanted(name) {
        return Ok(());
    }
    let xt = tensor::<T>(&x, 5)?;
    let out = p.out_dims(&x)?;
    let compares = (out.iter().product::<usize>() * p.kernel_size * p.kernel_size) as f64;
    let threads = THREADS.with(|t| t.get());
    let time = best_time(budget::<T>(), || {
        black_box(max_pool2d_threaded(black_box(&xt), &p, threads)?);
        Ok(())
    })?;
    report(name, T::DTYPE.suffix(), compares, time, None);
    Ok(())
}

/// Asserts (once, untimed) that a timed layer is bitwise the naive nested loops, on the
/// benchmark's own inputs, with one thread and with two.
fn verify_bitwise<T: Element>(c: util::Case, transposed: bool) -> BenchResult {
    let (x, w) = (tensor::<T>(&c.x, 1)?, tensor::<T>(&c.w, 2)?);
    let (got, naive) = if transposed {
        let p = ConvTranspose2dParams {
            stride: c.stride,
            padding: c.padding,
            output_padding: c.output_padding,
            dilation: c.dilation,
            groups: c.groups,
        };
        let one = conv_transpose2d(&x, &w, &p)?;
        if conv_transpose2d_threaded(&x, &w, &p, 2)?.data() != one.data() {
            return Err(format!("{c:?}: two threads differ from one").into());
        }
        (one, util::naive_conv_t(&c, x.data(), w.data()).0)
    } else {
        let p = Conv2dParams {
            stride: c.stride,
            padding: c.padding,
            dilation: c.dilation,
            groups: c.groups,
        };
        let one = conv2d(&x, &w, None, &p)?;
        if conv2d_threaded(&x, &w, None, &p, 2)?.data() != one.data() {
            return Err(format!("{c:?}: two threads differ from one").into());
        }
        (one, util::naive_conv2d(&c, x.data(), w.data(), None).0)
    };
    let same = got
        .data()
        .iter()
        .zip(&naive)
        .all(|(a, b)| a.to_bits_u64() == b.to_bits_u64());
    if !same || got.data().len() != naive.len() {
        return Err(format!("{c:?}: kernel differs from the naive nested loop").into());
    }
    Ok(())
}

fn all_dtypes(f: &dyn Fn(u8) -> BenchResult) -> BenchResult {
    (0..4).try_for_each(f)
}

/// The max_pool2d scan from its definition (seed with the corner, `max_step` over the window).
fn verify_pool<T: Element>(x: [usize; 4], p: MaxPool2dParams) -> BenchResult {
    let xt = tensor::<T>(&x, 5)?;
    let got = max_pool2d(&xt, &p)?;
    if max_pool2d_threaded(&xt, &p, 2)?.data() != got.data() {
        return Err(format!("max_pool2d {x:?}: two threads differ from one").into());
    }
    let [_, _, h, w] = x;
    let (k, s) = (p.kernel_size, p.stride);
    let (ho, wo) = ((h - k) / s + 1, (w - k) / s + 1);
    let mut want = Vec::new();
    for plane in xt.data().chunks_exact(h * w) {
        for oh in 0..ho {
            for ow in 0..wo {
                let mut m = plane[oh * s * w + ow * s];
                for r in 0..k {
                    for c in 0..k {
                        m = fuel_reference_backend::ops::max_step(
                            m,
                            plane[(oh * s + r) * w + ow * s + c],
                        );
                    }
                }
                want.push(m);
            }
        }
    }
    let same = got.data().len() == want.len()
        && got
            .data()
            .iter()
            .zip(&want)
            .all(|(a, b)| a.to_bits_u64() == b.to_bits_u64());
    if !same {
        return Err(format!("max_pool2d {x:?}: differs from the window scan").into());
    }
    Ok(())
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
    let resnet_case = layer([1, 64, 56, 56], [64, 64, 3, 3], (1, 1), (1, 1), 1);
    let depthwise_case = layer([1, 64, 56, 56], [64, 1, 3, 3], (1, 1), (1, 1), 64);
    let conv_t_case = layer([1, 64, 28, 28], [64, 32, 4, 4], (2, 2), (1, 1), 1);
    let pool_params = MaxPool2dParams {
        kernel_size: 3,
        stride: 2,
    };
    all_dtypes(&|d| {
        let run = |c, t| match d {
            0 => verify_bitwise::<f32>(c, t),
            1 => verify_bitwise::<f64>(c, t),
            2 => verify_bitwise::<bf16>(c, t),
            _ => verify_bitwise::<f16>(c, t),
        };
        if wanted("conv2d ResNet") {
            run(resnet_case, false)?;
        }
        if wanted("conv2d depthwise") {
            run(depthwise_case, false)?;
        }
        if wanted("conv_transpose2d") {
            run(conv_t_case, true)?;
        }
        let xp = [1, 64, 112, 112];
        if !wanted("max_pool2d") {
            return Ok(());
        }
        match d {
            0 => verify_pool::<f32>(xp, pool_params),
            1 => verify_pool::<f64>(xp, pool_params),
            2 => verify_pool::<bf16>(xp, pool_params),
            _ => verify_pool::<f16>(xp, pool_params),
        }
    })?;
    println!(
        "Every layer below, in every dtype, is bitwise equal to the naive nested loops \
         (and 2 threads to 1)."
    );
    let peak = Peak::detect();
    PEAK.with(|p| p.set(Some(peak)));
    println!(
        "ISA {}, measured clock {:.2} GHz; non-FMA peak per core = lanes x 2 FLOP/cycle x clock \
         = {:.1} GFLOP/s f32, {:.1} f64 (bf16/f16 compute in f32 lanes).\n",
        peak.isa,
        peak.clock_ghz,
        peak.gflops(4),
        peak.gflops(8)
    );
    match run_peer() {
        Ok((version, figures)) => {
            println!("Peer, measured in this run: {version}, f32 CPU kernels, 1 thread.\n");
            PEER.with(|p| *p.borrow_mut() = Some(figures));
        }
        Err(reason) => println!("peer: not available ({reason})\n"),
    }
    for threads in [1, 2] {
        THREADS.with(|t| t.set(threads));
        println!("{threads} thread(s):\n");
        table()?;
        println!();
    }
    Ok(())
}

fn table() -> BenchResult {
    let with_peer = PEER.with(|p| p.borrow().is_some());
    let (head, rule) = if with_peer {
        (" ORT 1 thr |", "-----------|")
    } else {
        ("", "")
    };
    println!(
        "| kernel / layer                                 | type |  best ms  | GFLOP/s | of peak |{head}"
    );
    println!(
        "|------------------------------------------------|------|-----------|---------|---------|{rule}"
    );
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
