//! quilt-io
#![warn(missing_docs)]
