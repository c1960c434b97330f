// The ideal gas, quilt's equation of state (quilt_sweep::physics::IdealGas):
// the three functions every kernel asks, over the parameters
// k = [gamma, gamma - 1, 1 / (gamma - 1), 0] rounded to T on the host.
// Another equation of state replaces this header (quilt_cuda::CudaEos)
// with the same three templates, written as its Rust functions are, so
// that the kernels and the CPU schemes agree bit for bit.
#pragma once

// Pressure of density rho and internal energy density rho_e.
template <class T> __device__ __forceinline__ T eos_pressure(const T* k, T rho, T rho_e) {
    return k[1] * rho_e;
}

// Internal energy density at density rho and pressure p.
template <class T> __device__ __forceinline__ T eos_internal_energy(const T* k, T rho, T p) {
    return p * k[2];
}

// rho c^2 at density rho and pressure p.
template <class T> __device__ __forceinline__ T eos_bulk_modulus(const T* k, T rho, T p) {
    return k[0] * p;
}
