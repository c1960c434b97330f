//! # quilt-integrator
//!
//! The time integrator of quilt: one coarse step of a block-structured AMR
//! hierarchy with uniform time stepping (the mode of Raghavan & Vadhiyar
//! 2015), with packed bins solved batch by batch through a [`SolveBackend`]
//! while the CPU prepares the next batch and closes the previous one.
//!
//! | module | holds |
//! |---|---|
//! | [`deck`] | the TOML input deck: sections, defaults, validation with key and line |
//! | [`cli`] | command-line overrides (`--config`, `--max-steps`, `--end-time`, `--out`, `--backend`) |
#![warn(missing_docs)]

pub mod cli;
pub mod deck;
