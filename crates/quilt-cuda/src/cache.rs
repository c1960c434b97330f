//! A cache of compiled kernel images on disk, so that a process does not
//! pay NVRTC again for what an earlier one compiled.
//!
//! NVRTC takes many seconds for a scheme file, and every process paid it
//! again for the same sources and options (docs/quilt-cuda.md has the
//! figures). Each cubin is stored under a name derived from everything that makes it
//! (the kernel sources, the compile options, the architecture and NVRTC's
//! version), and the file repeats that key in full, so a name collision or
//! a stale file is recompiled, never loaded. A file that cannot be read,
//! written or parsed is a miss (logged at debug level); the cache never
//! turns a compilation that works into an error.
//!
//! Where: `QUILT_KERNEL_CACHE` (a directory, or `off`), else
//! `$XDG_CACHE_HOME/quilt/kernels`, else `$HOME/.cache/quilt/kernels`.
//! Files are written atomically, so processes may share a directory.

use std::path::{Path, PathBuf};

/// Names the cache directory, or `off`.
pub const KERNEL_CACHE_ENV: &str = "QUILT_KERNEL_CACHE";

/// The first bytes of every cache file (bumped when the layout changes).
const MAGIC: &[u8; 16] = b"quilt-cubin-v1\n\0";

/// The cache directory the environment names; `None` when caching is off
/// or no directory is named.
pub fn cache_dir() -> Option<PathBuf> {
    match std::env::var_os(KERNEL_CACHE_ENV) {
        Some(v) if v == "off" => None,
        Some(v) if !v.is_empty() => Some(PathBuf::from(v)),
        _ => std::env::var_os("XDG_CACHE_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache")))
            .map(|d| d.join("quilt").join("kernels")),
    }
}

/// FNV-1a over `bytes`: a file name, not a guarantee (the file holds the
/// whole key).
fn fnv1a(bytes: &[u8]) -> u64 {
    use std::hash::Hasher;
    let mut h = fnv::FnvHasher::default();
    h.write(bytes);
    h.finish()
}

/// The file of `key` in `dir`; `stem` (the kernel file, the architecture)
/// only makes the name readable.
pub fn path_of(dir: &Path, stem: &str, key: &[u8]) -> PathBuf {
    dir.join(format!("{stem}-{:016x}.cubin", fnv1a(key)))
}

/// The cubin stored for `key` at `path`, if the file is there, whole and
/// made for exactly that key.
pub fn load(path: &Path, key: &[u8]) -> Option<Vec<u8>> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) => {
            if e.kind() != std::io::ErrorKind::NotFound {
                log::debug!("kernel cache: cannot read {}: {e}", path.display());
            }
            return None;
        }
    };
    let parsed = parse(&bytes, key);
    if parsed.is_none() {
        log::debug!(
            "kernel cache: {} is not a cubin for this key; recompiling",
            path.display()
        );
    }
    parsed.map(<[u8]>::to_vec)
}

fn parse<'a>(bytes: &'a [u8], key: &[u8]) -> Option<&'a [u8]> {
    let rest = bytes.strip_prefix(MAGIC.as_slice())?;
    let (len, rest) = rest.split_first_chunk::<8>()?;
    let len = usize::try_from(u64::from_le_bytes(*len)).ok()?;
    let (stored, cubin) = (rest.get(..len)?, rest.get(len..)?);
    (stored == key && !cubin.is_empty()).then_some(cubin)
}

/// Stores `cubin` for `key` at `path` (atomically; failures are logged and
/// otherwise ignored).
pub fn store(path: &Path, key: &[u8], cubin: &[u8]) {
    if let Some(dir) = path.parent()
        && let Err(e) = std::fs::create_dir_all(dir)
    {
        log::debug!("kernel cache: cannot create {}: {e}", dir.display());
        return;
    }
    let mut bytes = Vec::with_capacity(MAGIC.len() + 8 + key.len() + cubin.len());
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&(key.len() as u64).to_le_bytes());
    bytes.extend_from_slice(key);
    bytes.extend_from_slice(cubin);
    if let Err((p, e)) = quilt_mesh::atomic_file::write_bytes(path, &bytes) {
        log::debug!("kernel cache: cannot write {}: {e}", p.display());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("quilt-kcache-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn a_stored_cubin_comes_back_for_its_key_only() {
        let dir = scratch("roundtrip");
        let key = b"rtvd.cu sm_90 fma=false nvrtc 13.0 <sources>".to_vec();
        let path = path_of(&dir, "rtvd-sm_90", &key);
        assert_eq!(load(&path, &key), None, "nothing stored yet");
        store(&path, &key, b"\x7fELF cubin bytes");
        assert_eq!(
            load(&path, &key).as_deref(),
            Some(&b"\x7fELF cubin bytes"[..])
        );
        // Another key under the same name (a collision) is a miss.
        let other = b"rtvd.cu sm_90 fma=true nvrtc 13.0 <sources>";
        assert_eq!(load(&path, other), None);
        // Storing again replaces the file.
        store(&path, other, b"\x7fELF other");
        assert_eq!(load(&path, other).as_deref(), Some(&b"\x7fELF other"[..]));
        assert_eq!(load(&path, &key), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn broken_files_are_misses() {
        let dir = scratch("broken");
        std::fs::create_dir_all(&dir).unwrap();
        let key = b"key".to_vec();
        let path = path_of(&dir, "waf-sm_90", &key);
        store(&path, &key, b"cubin");
        let whole = std::fs::read(&path).unwrap();
        for cut in [0, 5, MAGIC.len(), MAGIC.len() + 8, whole.len() - 5] {
            std::fs::write(&path, &whole[..cut]).unwrap();
            assert_eq!(load(&path, &key), None, "file cut at {cut} bytes");
        }
        let mut wrong = whole.clone();
        wrong[0] ^= 1;
        std::fs::write(&path, &wrong).unwrap();
        assert_eq!(load(&path, &key), None, "wrong magic");
        // A directory that cannot be created is not an error.
        let blocked = dir.join("file");
        std::fs::write(&blocked, b"x").unwrap();
        store(&blocked.join("sub").join("a.cubin"), &key, b"cubin");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn file_names_follow_the_key() {
        let dir = Path::new("/x");
        let a = path_of(dir, "rtvd-sm_90", b"key a");
        assert_eq!(a, path_of(dir, "rtvd-sm_90", b"key a"));
        assert_ne!(a, path_of(dir, "rtvd-sm_90", b"key b"));
        assert!(a.starts_with(dir) && a.to_string_lossy().ends_with(".cubin"));
    }
}
