//! Streaming patch arrays into and out of one big chunked dataset in whole,
//! chunk-aligned pieces, so every chunk is written (and checksummed) once
//! and no patch needs its own dataset.

use std::path::Path;

use crate::error::{Hdf5Context, IoError};

use super::format::CheckpointReal;

/// Appends slices to a 1-d dataset through a chunk-sized staging buffer.
pub(crate) struct ChunkedWriter<'a, T> {
    ds: &'a hdf5::Dataset,
    path: &'a Path,
    name: &'a str,
    buf: Vec<T>,
    chunk: usize,
    written: usize,
}

impl<'a, T: CheckpointReal> ChunkedWriter<'a, T> {
    pub(crate) fn new(ds: &'a hdf5::Dataset, path: &'a Path, name: &'a str, chunk: usize) -> Self {
        ChunkedWriter {
            ds,
            path,
            name,
            buf: Vec::with_capacity(chunk),
            chunk,
            written: 0,
        }
    }

    pub(crate) fn push(&mut self, mut data: &[T]) -> Result<(), IoError> {
        while !data.is_empty() {
            let take = (self.chunk - self.buf.len()).min(data.len());
            self.buf.extend_from_slice(&data[..take]);
            data = &data[take..];
            if self.buf.len() == self.chunk {
                self.flush()?;
            }
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), IoError> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let end = self.written + self.buf.len();
        self.ds
            .write_slice(&self.buf[..], self.written..end)
            .at(self.path, &format!("write {}", self.name))?;
        self.written = end;
        self.buf.clear();
        Ok(())
    }

    /// Writes what is staged; returns the number of elements written.
    pub(crate) fn finish(mut self) -> Result<usize, IoError> {
        self.flush()?;
        Ok(self.written)
    }
}

/// Reads consecutive slices of a 1-d dataset through chunk-aligned reads.
pub(crate) struct ChunkedReader<'a, T> {
    ds: &'a hdf5::Dataset,
    path: &'a Path,
    name: &'a str,
    len: usize,
    chunk: usize,
    buf: Vec<T>,
    /// Dataset position of `buf[0]`.
    buf_start: usize,
    /// Dataset position of the next element to hand out.
    pos: usize,
}

impl<'a, T: CheckpointReal> ChunkedReader<'a, T> {
    pub(crate) fn new(
        ds: &'a hdf5::Dataset,
        path: &'a Path,
        name: &'a str,
        len: usize,
        chunk: usize,
    ) -> Self {
        ChunkedReader {
            ds,
            path,
            name,
            len,
            chunk,
            buf: Vec::new(),
            buf_start: 0,
            pos: 0,
        }
    }

    /// Fills `out` with the next `out.len()` elements.
    pub(crate) fn pull(&mut self, out: &mut [T]) -> Result<(), IoError> {
        let mut filled = 0;
        while filled < out.len() {
            let in_buf = self.buf_start + self.buf.len();
            if self.pos == in_buf {
                self.refill()?;
            }
            let off = self.pos - self.buf_start;
            let take = (self.buf.len() - off).min(out.len() - filled);
            out[filled..filled + take].copy_from_slice(&self.buf[off..off + take]);
            filled += take;
            self.pos += take;
        }
        Ok(())
    }

    fn refill(&mut self) -> Result<(), IoError> {
        let start = self.pos;
        let end = (start + self.chunk).min(self.len);
        if start >= end {
            return Err(IoError::CorruptCheckpoint {
                path: self.path.to_path_buf(),
                detail: format!(
                    "{} ends at element {} but more is needed",
                    self.name, self.len
                ),
            });
        }
        let arr = self.ds.read_slice_1d::<T, _>(start..end).damaged(
            self.path,
            format_args!("cannot read {} elements {start}..{end}", self.name),
        )?;
        self.buf.clear();
        self.buf.extend(arr.iter().copied());
        self.buf_start = start;
        Ok(())
    }

    /// Elements handed out so far.
    pub(crate) fn position(&self) -> usize {
        self.pos
    }
}
