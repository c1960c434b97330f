//! Finding a usable device before anything touches the driver, and the
//! backend choice (`auto`, `cpu`, `cuda`) built on it.
//!
//! cudarc loads `libcuda` and `libnvrtc` lazily and panics if a symbol's
//! library is missing, so every entry point of this crate calls [`probe`]
//! (or [`probe_device`]) first: with no driver it returns
//! [`CudaError::NoDriver`] instead of panicking.

use std::fmt;
use std::str::FromStr;

use cudarc::driver::{result, sys};

use crate::error::{CudaError, DriverContext};

/// What [`probe_device`] found.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceInfo {
    /// Device ordinal.
    pub ordinal: usize,
    /// Device name, e.g. `NVIDIA H100 80GB HBM3`.
    pub name: String,
    /// Compute capability `(major, minor)`; the kernels are compiled for
    /// `sm_{major}{minor}`.
    pub compute_capability: (i32, i32),
    /// Streaming multiprocessors.
    pub multiprocessors: u32,
    /// Device memory in bytes.
    pub total_memory: usize,
    /// L2 cache in bytes.
    pub l2_bytes: u32,
    /// Driver API version (e.g. 13000 for CUDA 13.0).
    pub driver_version: i32,
    /// NVRTC version `(major, minor)`.
    pub nvrtc_version: (i32, i32),
}

impl DeviceInfo {
    /// The NVRTC architecture option value for this device, `sm_XY`.
    pub fn arch(&self) -> String {
        format!(
            "sm_{}{}",
            self.compute_capability.0, self.compute_capability.1
        )
    }
}

impl fmt::Display for DeviceInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} (device {}, {}, {} SMs, {:.1} GiB, driver {}.{}, NVRTC {}.{})",
            self.name,
            self.ordinal,
            self.arch(),
            self.multiprocessors,
            self.total_memory as f64 / f64::from(1u32 << 30),
            self.driver_version / 1000,
            (self.driver_version % 1000) / 10,
            self.nvrtc_version.0,
            self.nvrtc_version.1
        )
    }
}

/// Whether the CUDA driver library can be loaded.
pub fn driver_available() -> bool {
    // SAFETY: only tries to dlopen the library under the names cudarc uses.
    unsafe { sys::is_culib_present() }
}

/// Whether NVRTC (`libnvrtc.so.13`) can be loaded.
pub fn nvrtc_available() -> bool {
    // SAFETY: as above.
    unsafe { cudarc::nvrtc::sys::is_culib_present() }
}

/// The NVRTC version, if NVRTC loads.
pub fn nvrtc_version() -> Result<(i32, i32), CudaError> {
    if !nvrtc_available() {
        return Err(CudaError::NoNvrtc);
    }
    let (mut major, mut minor) = (0, 0);
    // SAFETY: the library is present; the call writes two ints.
    let r = unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor) };
    if r != cudarc::nvrtc::sys::nvrtcResult::NVRTC_SUCCESS {
        return Err(CudaError::Nvrtc {
            call: "nvrtcVersion",
            status: format!("{r:?}"),
        });
    }
    Ok((major, minor))
}

/// Probes device 0; see [`probe_device`].
pub fn probe() -> Result<DeviceInfo, CudaError> {
    probe_device(0)
}

/// Checks, without creating a context, that the driver loads and
/// initialises, that device `ordinal` exists and that NVRTC loads.
pub fn probe_device(ordinal: usize) -> Result<DeviceInfo, CudaError> {
    if !driver_available() {
        return Err(CudaError::NoDriver);
    }
    result::init().map_err(|e| CudaError::NoDevice(format!("cuInit failed: {e}")))?;
    let count = result::device::get_count().call("cuDeviceGetCount")?;
    if count <= 0 {
        return Err(CudaError::NoDevice("the driver reports 0 devices".into()));
    }
    let count = count as usize;
    if ordinal >= count {
        return Err(CudaError::DeviceOrdinal { ordinal, count });
    }
    let dev = result::device::get(ordinal as i32).call("cuDeviceGet")?;
    let attr = |a: sys::CUdevice_attribute| {
        // SAFETY: `dev` is a valid device handle.
        unsafe { result::device::get_attribute(dev, a) }.call("cuDeviceGetAttribute")
    };
    use sys::CUdevice_attribute::*;
    let compute_capability = (
        attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
        attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
    );
    let multiprocessors = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?.max(1) as u32;
    let l2_bytes = attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)?.max(0) as u32;
    let name = result::device::get_name(dev).call("cuDeviceGetName")?;
    // SAFETY: as above.
    let total_memory = unsafe { result::device::total_mem(dev) }.call("cuDeviceTotalMem")?;
    let mut driver_version = 0;
    // SAFETY: writes one int.
    unsafe { sys::cuDriverGetVersion(&mut driver_version) }
        .result()
        .call("cuDriverGetVersion")?;
    let nvrtc_version = nvrtc_version()?;
    Ok(DeviceInfo {
        ordinal,
        name,
        compute_capability,
        multiprocessors,
        total_memory,
        l2_bytes,
        driver_version,
        nvrtc_version,
    })
}

/// Which solver backend a run asks for (a configuration value: `auto`,
/// `cpu` or `cuda`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Backend {
    /// CUDA if [`probe`] finds a usable device, else the CPU (one log line).
    #[default]
    Auto,
    /// The CPU reference solver.
    Cpu,
    /// CUDA; an error if no usable device exists.
    Cuda,
}

impl FromStr for Backend {
    type Err = CudaError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "auto" => Ok(Self::Auto),
            "cpu" => Ok(Self::Cpu),
            "cuda" | "gpu" => Ok(Self::Cuda),
            _ => Err(CudaError::Config(format!(
                "unknown backend `{s}` (expected one of: auto, cpu, cuda)"
            ))),
        }
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Auto => "auto",
            Self::Cpu => "cpu",
            Self::Cuda => "cuda",
        })
    }
}

/// The backend [`select_backend`] settled on.
#[derive(Clone, Debug, PartialEq)]
pub enum Selected {
    /// The CPU reference solver.
    Cpu,
    /// CUDA on the probed device.
    Cuda(DeviceInfo),
}

/// Resolves a [`Backend`] request on device `ordinal`: `Cuda` fails with
/// the probe's error when no usable device exists, `Auto` then falls back
/// to the CPU and says why in one `info` log line.
pub fn select_backend(requested: Backend, ordinal: usize) -> Result<Selected, CudaError> {
    match requested {
        Backend::Cpu => Ok(Selected::Cpu),
        Backend::Cuda => probe_device(ordinal).map(Selected::Cuda),
        Backend::Auto => match probe_device(ordinal) {
            Ok(info) => Ok(Selected::Cuda(info)),
            Err(e) => {
                log::info!("backend auto: using the CPU solver ({e})");
                Ok(Selected::Cpu)
            }
        },
    }
}
