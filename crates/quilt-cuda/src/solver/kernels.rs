//! The entry points of one scheme and precision, with the launch shapes
//! derived from their occupancy.

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaModule};

use crate::device::function;
use crate::error::{CudaError, DriverContext};
use crate::params::{fused_words, slot_words};
use crate::probe::DeviceInfo;
use crate::real::GpuReal;
use crate::source::{KernelFile, KernelShape, kernel_name};

/// Threads per block of every sweep kernel (`__launch_bounds__(128, ...)`).
pub(crate) const BLOCK: u32 = 128;

/// Threads per block of the scan kernels (`QUILT_SCAN_BLOCK`).
pub(crate) const SCAN_BLOCK: u32 = 256;

/// Threads per block of the scalar kernels (`QUILT_SCALAR_BLOCK`): one
/// column at a time, a thread per cell.
pub(crate) const SCALAR_BLOCK: u32 = 64;

/// Registers, local memory and occupancy of one kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelInfo {
    /// Entry point.
    pub name: String,
    /// Registers per thread.
    pub registers: i32,
    /// Local memory (spills, stack) per thread in bytes.
    pub local_bytes: i32,
    /// Dynamic shared memory per block in bytes.
    pub shared_bytes: u32,
    /// Resident blocks of `BLOCK` threads per multiprocessor.
    pub blocks_per_sm: u32,
}

/// One loaded kernel and its launch shape.
#[derive(Clone, Debug)]
pub(crate) struct Kernel {
    pub func: CudaFunction,
    pub name: String,
    /// Threads per block.
    pub block: u32,
    pub smem: u32,
    /// Grid size that fills the device once (blocks per SM x SMs).
    pub full_grid: u32,
    pub blocks_per_sm: u32,
}

impl Kernel {
    fn load(
        module: &Arc<CudaModule>,
        name: String,
        block: u32,
        smem: u32,
        sms: u32,
    ) -> Result<Self, CudaError> {
        let func = function(module, &name)?;
        let blocks_per_sm = func
            .occupancy_max_active_blocks_per_multiprocessor(block, smem as usize, None)
            .call("cuOccupancyMaxActiveBlocksPerMultiprocessor")?
            .max(1);
        Ok(Self {
            func,
            name,
            block,
            smem,
            full_grid: blocks_per_sm * sms,
            blocks_per_sm,
        })
    }

    /// Blocks for `units` work units of `per_block` each, at most one full
    /// device.
    pub fn grid(&self, units: u64, per_block: u64) -> u32 {
        units
            .div_ceil(per_block)
            .min(u64::from(self.full_grid))
            .max(1) as u32
    }

    fn info(&self) -> KernelInfo {
        KernelInfo {
            name: self.name.clone(),
            registers: self.func.num_regs().unwrap_or(-1),
            local_bytes: self.func.local_size_bytes().unwrap_or(-1),
            shared_bytes: self.smem,
            blocks_per_sm: self.blocks_per_sm,
        }
    }
}

/// Every entry point a solver may launch.
#[derive(Clone, Debug)]
pub(crate) struct Kernels {
    pub default: Kernel,
    pub packed: Kernel,
    pub rows: Kernel,
    pub march: Kernel,
    pub fused: Kernel,
    /// The scheme's passive-scalar pass (`{scheme}_scalar_{precision}`),
    /// compiled when the layouts carry scalars.
    pub scalar: Option<Kernel>,
    pub scan: CudaFunction,
    /// Interiors from the device straight into the page-locked batch.
    pub store: CudaFunction,
    /// Ghost boxes from the page-locked batch straight onto the device.
    pub load: CudaFunction,
    /// [`Kernels::store`] with a table of external boxes.
    pub store_ext: CudaFunction,
    /// [`Kernels::load`] with a table of external boxes.
    pub load_ext: CudaFunction,
    /// Coarse means and CFL rates of external boxes' new interiors
    /// (`quilt_sweep::Restricted`).
    pub restrict_out: CudaFunction,
    /// A large layout's pass tables from their starts (`layout_table`).
    pub table: CudaFunction,
}

impl Kernels {
    pub fn load<T: GpuReal>(
        module: &Arc<CudaModule>,
        file: KernelFile,
        dev: &DeviceInfo,
        scalars: bool,
    ) -> Result<Self, CudaError> {
        let sms = dev.multiprocessors;
        let size = std::mem::size_of::<T>() as u32;
        let slot = slot_words(file) as u32 * size;
        let k = |shape, bytes: u32| {
            Kernel::load(module, kernel_name(file, shape, T::NAME), BLOCK, bytes, sms)
        };
        let scalar = if scalars {
            let name = format!("{}_scalar_{}", file.prefix(), T::NAME);
            Some(Kernel::load(module, name, SCALAR_BLOCK, slot, sms)?)
        } else {
            None
        };
        Ok(Self {
            default: k(KernelShape::Default, 2 * slot)?,
            packed: k(KernelShape::Packed, 2 * slot)?,
            rows: k(KernelShape::Rows, 4 * slot)?,
            // The march's rings are static shared memory.
            march: k(KernelShape::March, 0)?,
            fused: k(KernelShape::Fused, fused_words(file) as u32 * size)?,
            scalar,
            scan: function(module, &format!("scan_{}", T::NAME))?,
            store: function(module, &format!("store_{}", T::NAME))?,
            load: function(module, &format!("load_{}", T::NAME))?,
            store_ext: function(module, &format!("store_ext_{}", T::NAME))?,
            load_ext: function(module, &format!("load_ext_{}", T::NAME))?,
            restrict_out: function(module, &format!("restrict_out_{}", T::NAME))?,
            table: function(module, "layout_table")?,
        })
    }

    pub fn info(&self) -> Vec<KernelInfo> {
        [
            &self.default,
            &self.packed,
            &self.rows,
            &self.march,
            &self.fused,
        ]
        .into_iter()
        .chain(&self.scalar)
        .map(|k| k.info())
        .collect()
    }
}
