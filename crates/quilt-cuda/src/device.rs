//! Contexts and compiled kernel images, created once per process and device.
//!
//! An image is one kernel file compiled by NVRTC for the device's own
//! architecture (`sm_XY` from its compute capability), with FMA contraction
//! on or off: the cubin NVRTC returns, so the driver does no JIT. Every
//! solver loads its own module from the cached image (milliseconds), which
//! gives it a private constant bank for its descriptors.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use cudarc::driver::{CudaContext, CudaFunction, CudaModule};
use cudarc::nvrtc::Ptx;

use crate::cache;
use crate::error::{CudaError, DriverContext};
use crate::probe::{DeviceInfo, probe_device};
use crate::source::{CompileOptions, KernelFile, cache_key, compile};

/// A device with its primary context.
#[derive(Clone, Debug)]
pub(crate) struct Device {
    pub info: DeviceInfo,
    pub ctx: Arc<CudaContext>,
}

/// How a kernel file is compiled: FMA contraction, approximate f32
/// reciprocals, divisions and square roots, blocks per SM asked of the
/// marching kernels, passive scalars of the batch layout, the equation of
/// state's header ([`crate::CudaEos::SOURCE`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Build {
    pub fma: bool,
    pub fast_f32: bool,
    pub march_blocks: Option<u32>,
    pub scalars: u32,
    pub eos: &'static str,
}

impl Default for Build {
    fn default() -> Self {
        Self {
            fma: false,
            fast_f32: false,
            march_blocks: None,
            scalars: 0,
            eos: crate::eos::IDEAL_GAS_CUH,
        }
    }
}

/// (device, file, build).
type ModuleKey = (usize, KernelFile, Build);

fn devices() -> &'static Mutex<HashMap<usize, Device>> {
    static D: OnceLock<Mutex<HashMap<usize, Device>>> = OnceLock::new();
    D.get_or_init(|| Mutex::new(HashMap::new()))
}

type ImageCell = Arc<OnceLock<Result<Arc<Image>, String>>>;

/// A compiled kernel file.
pub(crate) enum Image {
    Cubin(Vec<u8>),
    Ptx(String),
}

fn images() -> &'static Mutex<HashMap<ModuleKey, ImageCell>> {
    static M: OnceLock<Mutex<HashMap<ModuleKey, ImageCell>>> = OnceLock::new();
    M.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The device `ordinal`, probed and with its primary context retained.
pub(crate) fn device(ordinal: usize) -> Result<Device, CudaError> {
    let mut map = devices().lock().unwrap_or_else(|e| e.into_inner());
    if let Some(d) = map.get(&ordinal) {
        return Ok(d.clone());
    }
    let info = probe_device(ordinal)?;
    let ctx = CudaContext::new(ordinal).call("cuDevicePrimaryCtxRetain")?;
    // Streams and buffers of this crate are synchronised explicitly (events
    // per chunk); cudarc's per-allocation event tracking would serialise
    // the streams that work on disjoint ranges of one buffer.
    // SAFETY: no cudarc-managed allocation of this context relies on it.
    unsafe { ctx.disable_event_tracking() };
    log::info!("CUDA device {info}");
    let d = Device { info, ctx };
    map.insert(ordinal, d.clone());
    Ok(d)
}

/// The image of `file` for `dev`, compiled on first use (other threads
/// asking for the same image wait for that compilation).
pub(crate) fn image(dev: &Device, file: KernelFile, b: Build) -> Result<Arc<Image>, CudaError> {
    let key = (dev.info.ordinal, file, b);
    let cell = {
        let mut map = images().lock().unwrap_or_else(|e| e.into_inner());
        map.entry(key).or_default().clone()
    };
    let res = cell.get_or_init(|| build(dev, file, b).map(Arc::new).map_err(|e| e.to_string()));
    res.clone().map_err(|log| CudaError::Compile {
        file: file.path(),
        arch: dev.info.arch(),
        status: "failed earlier in this process".into(),
        log,
    })
}

/// A fresh module of `file` on `dev` (compiling the image on first use).
pub(crate) fn module(
    dev: &Device,
    file: KernelFile,
    b: Build,
) -> Result<Arc<CudaModule>, CudaError> {
    let img = image(dev, file, b)?;
    let ptx = match &*img {
        Image::Cubin(c) => Ptx::from_binary(c.clone()),
        Image::Ptx(p) => Ptx::from_src(p.clone()),
    };
    dev.ctx.bind_to_thread().call("cuCtxSetCurrent")?;
    dev.ctx.load_module(ptx).call("cuModuleLoadData")
}

fn build(dev: &Device, file: KernelFile, b: Build) -> Result<Image, CudaError> {
    let t = Instant::now();
    let mut opts = CompileOptions::new(dev.info.arch(), b.fma);
    opts.fast_f32 = b.fast_f32;
    opts.eos = b.eos;
    if let Some(b) = b.march_blocks {
        for name in ["QUILT_MARCH_MINB_F32", "QUILT_MARCH_MINB_F64"] {
            opts.defines.push((name.to_string(), b.to_string()));
        }
    }
    if b.scalars > 0 {
        let ncomp = quilt_sweep::physics::NCOMP as u32 + b.scalars;
        opts.defines
            .push(("QUILT_NCOMP".to_string(), ncomp.to_string()));
    }
    // Cubins only: a PTX image is compiled again by the driver anyway.
    let cached = match (opts.arch.starts_with("sm_"), cache::cache_dir()) {
        (true, Some(dir)) => match cache_key(file, &opts) {
            Ok(key) => {
                let stem = format!("{}-{}", file.file_name().replace('.', "_"), opts.arch);
                Some((cache::path_of(&dir, &stem, &key), key))
            }
            Err(e) => {
                log::debug!("kernel cache: no key for {} ({e})", file.path());
                None
            }
        },
        _ => None,
    };
    if let Some((path, key)) = &cached
        && let Some(cubin) = cache::load(path, key)
    {
        log::info!(
            "loaded {} for {} ({b:?}) from {} in {:.3} s",
            file.path(),
            dev.info.arch(),
            path.display(),
            t.elapsed().as_secs_f64()
        );
        return Ok(Image::Cubin(cubin));
    }
    let out = compile(file, &opts)?;
    if !out.log.trim().is_empty() {
        log::debug!("NVRTC log of {} ({b:?}):\n{}", file.path(), out.log);
    }
    log::info!(
        "compiled {} for {} ({b:?}) in {:.1} s",
        file.path(),
        dev.info.arch(),
        t.elapsed().as_secs_f64()
    );
    if let (Some((path, key)), Some(cubin)) = (&cached, &out.cubin) {
        cache::store(path, key, cubin);
    }
    Ok(match out.cubin {
        Some(c) => Image::Cubin(c),
        None => Image::Ptx(out.ptx),
    })
}

/// Compiles several images at once on separate threads (NVRTC is thread
/// safe); later [`module`] calls load them without compiling.
pub(crate) fn precompile(dev: &Device, wanted: &[(KernelFile, bool)]) -> Result<(), CudaError> {
    std::thread::scope(|s| {
        let handles: Vec<_> = wanted
            .iter()
            .map(|&(file, fma)| {
                let b = Build {
                    fma,
                    ..Build::default()
                };
                s.spawn(move || image(dev, file, b).map(|_| ()))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(CudaError::Config("compiler thread panicked".into())))
            })
            .collect::<Result<Vec<()>, CudaError>>()
    })?;
    Ok(())
}

/// Loads an entry point.
pub(crate) fn function(module: &Arc<CudaModule>, name: &str) -> Result<CudaFunction, CudaError> {
    module.load_function(name).call("cuModuleGetFunction")
}
