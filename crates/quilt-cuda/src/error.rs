//! [`CudaError`]: everything the CUDA backend can report.

use cudarc::driver::DriverError;
use quilt_sweep::{LayoutError, SweepError};
use thiserror::Error;

/// An error of the CUDA backend: no usable driver, device or compiler, a
/// failed driver call, a kernel that NVRTC rejected (with its log), a layout
/// the kernels do not support, or the same step errors as the CPU solver
/// ([`SweepError`]).
#[derive(Debug, Error)]
pub enum CudaError {
    /// The CUDA driver library (`libcuda.so`) could not be loaded.
    #[error(
        "no CUDA driver: libcuda.so could not be loaded (is an NVIDIA driver installed and on the loader path?)"
    )]
    NoDriver,
    /// The run-time compiler (`libnvrtc.so.13`) could not be loaded.
    #[error(
        "NVRTC not found: libnvrtc.so.13 could not be loaded (install CUDA 13 or run scripts/nvrtc-venv.sh and put the directory it prints on LD_LIBRARY_PATH)"
    )]
    NoNvrtc,
    /// The driver loaded but reports no usable device.
    #[error("no usable CUDA device: {0}")]
    NoDevice(String),
    /// The requested device ordinal does not exist.
    #[error("CUDA device {ordinal} does not exist (the driver reports {count})")]
    DeviceOrdinal {
        /// Ordinal asked for.
        ordinal: usize,
        /// Devices present.
        count: usize,
    },
    /// A driver call failed.
    #[error("CUDA driver call `{call}` failed: {source}")]
    Driver {
        /// What was being done.
        call: &'static str,
        /// The driver's error.
        #[source]
        source: DriverError,
    },
    /// Device (or page-locked host) memory could not be had.
    #[error(
        "{what}: {} requested{} (fewer bins per batch, `batching.max_bins`, or a smaller hierarchy need less): {source}",
        quilt_mesh::memory::format_bytes(*bytes),
        match free_total {
            Some((f, t)) => format!(", {} free of {}", quilt_mesh::memory::format_bytes(*f), quilt_mesh::memory::format_bytes(*t)),
            None => String::new(),
        }
    )]
    Memory {
        /// `"device memory"` or `"page-locked host memory"`.
        what: &'static str,
        /// Bytes asked for.
        bytes: u64,
        /// Free and total device memory when the request failed, if known.
        free_total: Option<(u64, u64)>,
        /// The driver's error.
        #[source]
        source: DriverError,
    },
    /// Host memory to be page-locked could not be mapped
    /// ([`quilt_mesh::locked::Mapping`]).
    #[error(transparent)]
    HostMemory(quilt_mesh::error::MeshError),
    /// NVRTC rejected a kernel file; `log` is NVRTC's program log.
    #[error("NVRTC could not compile {file} for {arch} ({status}):\n{log}")]
    Compile {
        /// Kernel file (`kernels/rtvd.cu`...).
        file: &'static str,
        /// Target architecture option.
        arch: String,
        /// NVRTC's status string.
        status: String,
        /// NVRTC's program log.
        log: String,
    },
    /// Another NVRTC call failed.
    #[error("NVRTC call `{call}` failed: {status}")]
    Nvrtc {
        /// The call.
        call: &'static str,
        /// NVRTC's status string.
        status: String,
    },
    /// The batch layout is valid but outside what the kernels handle.
    #[error("unsupported layout for the CUDA kernels: {0}")]
    Unsupported(String),
    /// A configuration value is out of range.
    #[error("invalid CUDA solver configuration: {0}")]
    Config(String),
    /// The GPU and the CPU reference disagree about a step (a defect).
    #[error("internal error: {0}")]
    Internal(String),
    /// A step error, as the CPU solver reports it.
    #[error(transparent)]
    Sweep(#[from] SweepError),
}

impl From<LayoutError> for CudaError {
    fn from(e: LayoutError) -> Self {
        Self::Sweep(SweepError::Layout(e))
    }
}

impl CudaError {
    /// Whether a driver call failed for want of device memory.
    pub fn is_out_of_memory(&self) -> bool {
        match self {
            Self::Memory { .. } => true,
            Self::Driver { source, .. } => {
                source.0 == cudarc::driver::sys::cudaError_enum::CUDA_ERROR_OUT_OF_MEMORY
            }
            _ => false,
        }
    }

    /// The error of a failed allocation of `bytes` of `what`: out of
    /// memory says how much was free; anything else stays a driver error.
    pub(crate) fn allocation(
        what: &'static str,
        call: &'static str,
        bytes: usize,
        source: DriverError,
    ) -> Self {
        use cudarc::driver::sys::cudaError_enum as E;
        if !matches!(
            source.0,
            E::CUDA_ERROR_OUT_OF_MEMORY | E::CUDA_ERROR_INVALID_VALUE
        ) {
            return Self::Driver { call, source };
        }
        let free_total = cudarc::driver::result::mem_get_info()
            .ok()
            .map(|(f, t)| (f as u64, t as u64));
        Self::Memory {
            what,
            bytes: bytes as u64,
            free_total,
            source,
        }
    }
}

/// Attaches the name of the driver call to a [`DriverError`].
pub(crate) trait DriverContext<T> {
    fn call(self, call: &'static str) -> Result<T, CudaError>;
}

impl<T> DriverContext<T> for Result<T, DriverError> {
    fn call(self, call: &'static str) -> Result<T, CudaError> {
        self.map_err(|source| CudaError::Driver { call, source })
    }
}
