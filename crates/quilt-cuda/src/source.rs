//! The CUDA C sources of `kernels/`, embedded in the binary, and their
//! compilation with NVRTC.
//!
//! Each scheme file (`rtvd.cu`, `tvd.cu`, `waf.cu`) includes the shared
//! header `common.cuh`, handed to NVRTC as a named header, and defines the
//! entry points of both precisions: `{scheme}_{shape}_{f32|f64}` for the
//! shapes of [`KernelShape`], plus `scan_f32` / `scan_f64` (the input scan)
//! `store_f32` / `store_f64` (interiors into the page-locked batch) and
//! `load_f32` / `load_f64` (ghost boxes from it), and `store_ext_*` /
//! `load_ext_*`, which also take a table of patches kept in page-locked
//! boxes of their own.

use std::borrow::Cow;
use std::ffi::{CStr, CString, c_char};
use std::path::Path;
use std::ptr;

use cudarc::nvrtc::sys::{self, nvrtcProgram, nvrtcResult};

use crate::error::CudaError;
use crate::probe::nvrtc_available;

/// `kernels/common.cuh`.
pub const COMMON_CUH: &str = include_str!("../../../kernels/common.cuh");

/// Environment variable naming a directory whose `common.cuh` and scheme
/// files replace the embedded sources when kernels are compiled: kernel
/// changes can then be tried on a GPU machine with the binaries already
/// built.
pub const KERNELS_DIR_ENV: &str = "QUILT_KERNELS_DIR";

/// The source of `file` and of `common.cuh`: embedded, or read from `dir`.
/// Errors: [`CudaError::Config`] naming the file that cannot be read.
pub fn sources(
    file: KernelFile,
    dir: Option<&Path>,
) -> Result<(Cow<'static, str>, Cow<'static, str>), CudaError> {
    let Some(dir) = dir else {
        return Ok((Cow::Borrowed(file.source()), Cow::Borrowed(COMMON_CUH)));
    };
    let read = |name: &str| {
        let path = dir.join(name);
        std::fs::read_to_string(&path).map(Cow::Owned).map_err(|e| {
            CudaError::Config(format!(
                "{KERNELS_DIR_ENV}: cannot read kernel source {}: {e}",
                path.display()
            ))
        })
    };
    Ok((read(file.file_name())?, read("common.cuh")?))
}

/// One kernel file of `kernels/`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum KernelFile {
    /// `kernels/rtvd.cu`.
    Rtvd,
    /// `kernels/tvd.cu`.
    Tvd,
    /// `kernels/waf.cu`.
    Waf,
    /// `kernels/amr.cu`: the AMR operations of device-resident steps
    /// (fill, restriction, refluxing, CFL scan and tagging over flat items).
    Amr,
}

impl KernelFile {
    /// Every scheme file (the files [`KernelShape`]s are instantiated in).
    pub const ALL: [KernelFile; 3] = [Self::Rtvd, Self::Tvd, Self::Waf];

    /// The entry points of `kernels/amr.cu`, without their precision.
    pub const AMR_KERNELS: [&'static str; 7] = [
        "flat_copy",
        "flat_interp",
        "flat_boundary",
        "flat_restrict",
        "flat_reflux",
        "flat_rate",
        "flat_tag",
    ];

    /// File name inside `kernels/`.
    pub const fn file_name(self) -> &'static str {
        match self {
            Self::Rtvd => "rtvd.cu",
            Self::Tvd => "tvd.cu",
            Self::Waf => "waf.cu",
            Self::Amr => "amr.cu",
        }
    }

    /// Path relative to the repository root, for messages.
    pub const fn path(self) -> &'static str {
        match self {
            Self::Rtvd => "kernels/rtvd.cu",
            Self::Tvd => "kernels/tvd.cu",
            Self::Waf => "kernels/waf.cu",
            Self::Amr => "kernels/amr.cu",
        }
    }

    /// Prefix of the kernel names (`rtvd`, `tvd`, `waf`, `flat`).
    pub const fn prefix(self) -> &'static str {
        match self {
            Self::Rtvd => "rtvd",
            Self::Tvd => "tvd",
            Self::Waf => "waf",
            Self::Amr => "flat",
        }
    }

    /// The embedded source.
    pub const fn source(self) -> &'static str {
        match self {
            Self::Rtvd => include_str!("../../../kernels/rtvd.cu"),
            Self::Tvd => include_str!("../../../kernels/tvd.cu"),
            Self::Waf => include_str!("../../../kernels/waf.cu"),
            Self::Amr => include_str!("../../../kernels/amr.cu"),
        }
    }

    /// Every entry point the file defines.
    pub fn entry_points(self) -> Vec<String> {
        let mut out = Vec::new();
        if self == Self::Amr {
            for prec in ["f32", "f64"] {
                out.extend(Self::AMR_KERNELS.iter().map(|k| format!("{k}_{prec}")));
            }
            return out;
        }
        for prec in ["f32", "f64"] {
            for shape in KernelShape::ALL {
                out.push(kernel_name(self, shape, prec));
            }
            out.push(format!("scan_{prec}"));
            out.push(format!("store_{prec}"));
            out.push(format!("load_{prec}"));
            out.push(format!("store_ext_{prec}"));
            out.push(format!("load_ext_{prec}"));
        }
        out.push("layout_table".to_string());
        out
    }
}

/// The thread organisations each scheme file instantiates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KernelShape {
    /// One block per patch, every pass of the step (the paper's default scheme).
    Default,
    /// All blocks over the columns of one pass of all bins, block barriers.
    Packed,
    /// A warp per column, warp barriers only.
    Rows,
    /// A warp per segment of 32 columns, one thread marching each column.
    March,
    /// Rows for x passes, march for y and z, one cooperative launch per step.
    Fused,
}

impl KernelShape {
    /// Every shape.
    pub const ALL: [KernelShape; 5] = [
        Self::Default,
        Self::Packed,
        Self::Rows,
        Self::March,
        Self::Fused,
    ];

    /// Name part of the entry points.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Default => "default",
            Self::Packed => "packed",
            Self::Rows => "rows",
            Self::March => "march",
            Self::Fused => "fused",
        }
    }
}

/// `{scheme}_{shape}_{precision}`, e.g. `rtvd_march_f32`.
pub fn kernel_name(file: KernelFile, shape: KernelShape, precision: &str) -> String {
    format!("{}_{}_{precision}", file.prefix(), shape.name())
}

/// NVRTC options of one compilation.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CompileOptions {
    /// `--gpu-architecture` value: `sm_XY` (a real architecture: NVRTC also
    /// returns a cubin) or `compute_XY` (PTX only).
    pub arch: String,
    /// Contract multiply-adds into FMAs (`--fmad`). Off reproduces the CPU
    /// reference bit for bit; on is the fast path.
    pub fma: bool,
    /// Approximate f32 reciprocals, divisions and square roots
    /// (`-DQUILT_FAST_F32`, see
    /// [`CudaConfig::fast_f32`](crate::CudaConfig::fast_f32)).
    pub fast_f32: bool,
    /// Extra `-D` definitions, `(name, value)`.
    pub defines: Vec<(String, String)>,
    /// The header `eos.cuh`: the equation of state's functions
    /// ([`crate::CudaEos::SOURCE`]; the ideal gas's by default).
    pub eos: &'static str,
}

impl CompileOptions {
    /// Options for architecture `arch` with FMA contraction `fma`.
    pub fn new(arch: impl Into<String>, fma: bool) -> Self {
        Self {
            arch: arch.into(),
            fma,
            fast_f32: false,
            defines: Vec::new(),
            eos: crate::eos::IDEAL_GAS_CUH,
        }
    }

    fn to_args(&self) -> Vec<String> {
        let mut args = vec![
            format!("--gpu-architecture={}", self.arch),
            format!("--fmad={}", self.fma),
            "--std=c++17".to_string(),
            // IEEE division and square root, no flush to zero: the defaults,
            // spelled out because bitwise agreement with the CPU needs them.
            "--prec-div=true".to_string(),
            "--prec-sqrt=true".to_string(),
            "--ftz=false".to_string(),
        ];
        if self.arch.starts_with("sm_") {
            // Register and spill report in the program log.
            args.push("--ptxas-options=--verbose".to_string());
        }
        if self.fast_f32 {
            args.push("-DQUILT_FAST_F32=1".to_string());
        }
        for (k, v) in &self.defines {
            args.push(format!("-D{k}={v}"));
        }
        args
    }
}

/// Everything a compiled image of `file` under `opts` depends on, as the
/// key of the kernel cache ([`crate::cache`]): the sources as
/// [`compile`] would read them (`QUILT_KERNELS_DIR` included), NVRTC's
/// arguments and NVRTC's version.
pub fn cache_key(file: KernelFile, opts: &CompileOptions) -> Result<Vec<u8>, CudaError> {
    let (major, minor) = crate::probe::nvrtc_version()?;
    let dir = std::env::var_os(KERNELS_DIR_ENV).map(std::path::PathBuf::from);
    let (src, common) = sources(file, dir.as_deref())?;
    let mut key = format!("{}\0nvrtc {major}.{minor}\0", file.file_name()).into_bytes();
    for a in opts.to_args() {
        key.extend_from_slice(a.as_bytes());
        key.push(0);
    }
    for part in [&*src, &*common, opts.eos] {
        key.extend_from_slice(&(part.len() as u64).to_le_bytes());
        key.extend_from_slice(part.as_bytes());
    }
    Ok(key)
}

/// What NVRTC produced.
#[derive(Clone, Debug)]
pub struct Compiled {
    /// PTX text.
    pub ptx: String,
    /// Cubin, for a real architecture.
    pub cubin: Option<Vec<u8>>,
    /// The program log (warnings; ptxas' register report for `sm_*`).
    pub log: String,
}

/// A program handle destroyed on drop.
struct Program(nvrtcProgram);

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: created by nvrtcCreateProgram, destroyed once.
        let r = unsafe { sys::nvrtcDestroyProgram(&mut self.0) };
        if r != nvrtcResult::NVRTC_SUCCESS {
            log::warn!("nvrtcDestroyProgram: {r:?}");
        }
    }
}

fn status(r: nvrtcResult) -> String {
    // SAFETY: returns a static string.
    let s = unsafe { sys::nvrtcGetErrorString(r) };
    if s.is_null() {
        format!("{r:?}")
    } else {
        // SAFETY: NUL-terminated static string.
        unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned()
    }
}

fn check(call: &'static str, r: nvrtcResult) -> Result<(), CudaError> {
    if r == nvrtcResult::NVRTC_SUCCESS {
        Ok(())
    } else {
        Err(CudaError::Nvrtc {
            call,
            status: status(r),
        })
    }
}

/// Reads a sized byte product of a program (log, PTX, cubin).
fn read_bytes(
    prog: &Program,
    size_call: &'static str,
    size: unsafe fn(nvrtcProgram, *mut usize) -> nvrtcResult,
    get_call: &'static str,
    get: unsafe fn(nvrtcProgram, *mut c_char) -> nvrtcResult,
) -> Result<Vec<u8>, CudaError> {
    let mut n = 0usize;
    // SAFETY: valid program, writes one usize.
    check(size_call, unsafe { size(prog.0, &mut n) })?;
    let mut buf = vec![0u8; n];
    if n > 0 {
        // SAFETY: the buffer holds the size NVRTC asked for.
        check(get_call, unsafe { get(prog.0, buf.as_mut_ptr().cast()) })?;
    }
    Ok(buf)
}

fn text(mut bytes: Vec<u8>) -> String {
    while bytes.last() == Some(&0) {
        bytes.pop();
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Compiles one kernel file with NVRTC. Errors: [`CudaError::NoNvrtc`] if
/// the library does not load, [`CudaError::Compile`] with the program log if
/// the source does not compile.
pub fn compile(file: KernelFile, opts: &CompileOptions) -> Result<Compiled, CudaError> {
    if !nvrtc_available() {
        return Err(CudaError::NoNvrtc);
    }
    let dir = std::env::var_os(KERNELS_DIR_ENV).map(std::path::PathBuf::from);
    let (text_src, text_common) = sources(file, dir.as_deref())?;
    if let Some(dir) = &dir {
        log::info!(
            "{}: compiling {} from {}",
            KERNELS_DIR_ENV,
            file.file_name(),
            dir.display()
        );
    }
    let src = CString::new(text_src.into_owned())
        .map_err(|_| CudaError::Config(format!("{} contains a NUL", file.path())))?;
    let name = CString::new(file.file_name()).expect("static name");
    let header = CString::new(text_common.into_owned())
        .map_err(|_| CudaError::Config("common.cuh contains a NUL".into()))?;
    let header_name = CString::new("common.cuh").expect("static name");
    let eos = CString::new(opts.eos)
        .map_err(|_| CudaError::Config("the equation of state's header contains a NUL".into()))?;
    let eos_name = CString::new("eos.cuh").expect("static name");
    let headers = [header.as_ptr(), eos.as_ptr()];
    let header_names = [header_name.as_ptr(), eos_name.as_ptr()];
    let mut raw: nvrtcProgram = ptr::null_mut();
    // SAFETY: all strings outlive the program's creation (NVRTC copies them).
    check("nvrtcCreateProgram", unsafe {
        sys::nvrtcCreateProgram(
            &mut raw,
            src.as_ptr(),
            name.as_ptr(),
            headers.len() as i32,
            headers.as_ptr(),
            header_names.as_ptr(),
        )
    })?;
    let prog = Program(raw);
    let args: Vec<CString> = opts
        .to_args()
        .into_iter()
        .map(|a| {
            CString::new(a).map_err(|_| CudaError::Config("compile option contains a NUL".into()))
        })
        .collect::<Result<_, _>>()?;
    let argv: Vec<*const c_char> = args.iter().map(|a| a.as_ptr()).collect();
    // SAFETY: argv points to live C strings.
    let r = unsafe { sys::nvrtcCompileProgram(prog.0, argv.len() as i32, argv.as_ptr()) };
    let log = text(read_bytes(
        &prog,
        "nvrtcGetProgramLogSize",
        sys::nvrtcGetProgramLogSize,
        "nvrtcGetProgramLog",
        sys::nvrtcGetProgramLog,
    )?);
    if r != nvrtcResult::NVRTC_SUCCESS {
        return Err(CudaError::Compile {
            file: file.path(),
            arch: opts.arch.clone(),
            status: status(r),
            log,
        });
    }
    let ptx = text(read_bytes(
        &prog,
        "nvrtcGetPTXSize",
        sys::nvrtcGetPTXSize,
        "nvrtcGetPTX",
        sys::nvrtcGetPTX,
    )?);
    let cubin = if opts.arch.starts_with("sm_") {
        Some(read_bytes(
            &prog,
            "nvrtcGetCUBINSize",
            sys::nvrtcGetCUBINSize,
            "nvrtcGetCUBIN",
            sys::nvrtcGetCUBIN,
        )?)
    } else {
        None
    };
    Ok(Compiled { ptx, cubin, log })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_come_from_the_named_directory() {
        let (src, common) = sources(KernelFile::Waf, None).unwrap();
        assert_eq!(src, KernelFile::Waf.source());
        assert_eq!(common, COMMON_CUH);

        let dir = std::env::temp_dir().join(format!("quilt-kernels-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("waf.cu"), "// waf\n").unwrap();
        let err = sources(KernelFile::Waf, Some(&dir))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(KERNELS_DIR_ENV) && err.contains("common.cuh"),
            "{err}"
        );
        std::fs::write(dir.join("common.cuh"), "// common\n").unwrap();
        let (src, common) = sources(KernelFile::Waf, Some(&dir)).unwrap();
        assert_eq!((&*src, &*common), ("// waf\n", "// common\n"));
        let err = sources(KernelFile::Rtvd, Some(&dir))
            .unwrap_err()
            .to_string();
        assert!(err.contains("rtvd.cu"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
