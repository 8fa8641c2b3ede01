//! The kernel cache on disk: compiled kernel images kept between processes, so that a process pays
//! NVRTC only for the kernels no earlier process compiled for the same card, options and toolkit.
//!
//! An entry is one file, `<version>-<family>-<hash>.kcache`, written to a temporary file in the
//! same folder and renamed into place, so that processes sharing the folder never read a
//! half-written entry. It carries the whole key (checked on reading, so that a hash collision
//! cannot hand over another kernel) and a checksum of the image (so that a truncated or damaged
//! file is found, removed and compiled again). Entries of other gpupc versions are removed the
//! first time a process uses the folder. Nothing here needs a GPU: the tests run on CI.

use std::fs;
use std::hash::Hasher;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, SystemTime};

const MAGIC: &[u8; 8] = b"GPUPCKC1";
const SUFFIX: &str = ".kcache";
const TMP_PREFIX: &str = ".tmp-";
/// A temporary file this old was left by a process that died while writing.
const STALE_TMP: Duration = Duration::from_secs(3600);
/// The version that names and keys the entries; a new version starts a new set of entries.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

fn fnv64(parts: &[&[u8]]) -> u64 {
    let mut h = fnv::FnvHasher::default();
    for p in parts {
        h.write(p);
        // a separator, so that ("ab", "c") and ("a", "bc") differ
        h.write_u8(0xff);
    }
    h.finish()
}

/// Everything that changes the image NVRTC makes: the kernel family, its source, the compile
/// options, NVRTC's version and the target architecture, and gpupc's version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelKey {
    family: String,
    text: String,
}

impl KernelKey {
    pub fn new(family: &str, source: &str, options: &[String], nvrtc: (i32, i32), target: &str) -> Self {
        let text = format!(
            "gpupc {VERSION}\nfamily {family}\nnvrtc {}.{}\ntarget {target}\noptions {}\nsource {} bytes, fnv {:016x}\n",
            nvrtc.0,
            nvrtc.1,
            options.join(" "),
            source.len(),
            fnv64(&[source.as_bytes()])
        );
        KernelKey { family: family.to_string(), text }
    }

    /// The entry's file name within the cache folder.
    pub fn file_name(&self) -> String {
        format!("{VERSION}-{}-{:016x}{SUFFIX}", self.family, fnv64(&[self.text.as_bytes()]))
    }
}

fn encode(key: &KernelKey, image: &[u8]) -> Vec<u8> {
    let k = key.text.as_bytes();
    let mut out = Vec::with_capacity(8 + 4 + k.len() + 16 + image.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(k.len() as u32).to_le_bytes());
    out.extend_from_slice(k);
    out.extend_from_slice(&(image.len() as u64).to_le_bytes());
    out.extend_from_slice(&fnv64(&[image]).to_le_bytes());
    out.extend_from_slice(image);
    out
}

/// The image of an entry's bytes, when they are whole and hold `key`.
fn decode(key: &KernelKey, bytes: &[u8]) -> Option<Vec<u8>> {
    let rest = bytes.strip_prefix(MAGIC)?;
    let (klen, rest) = rest.split_first_chunk::<4>()?;
    let klen = u32::from_le_bytes(*klen) as usize;
    if rest.len() < klen || &rest[..klen] != key.text.as_bytes() {
        return None;
    }
    let rest = &rest[klen..];
    let (ilen, rest) = rest.split_first_chunk::<8>()?;
    let (sum, image) = rest.split_first_chunk::<8>()?;
    if u64::from_le_bytes(*ilen) as usize != image.len() || u64::from_le_bytes(*sum) != fnv64(&[image]) {
        return None;
    }
    Some(image.to_vec())
}

/// What reading an entry found.
#[derive(Debug, PartialEq, Eq)]
pub enum Lookup {
    Hit(Vec<u8>),
    Miss,
    /// The file was there but damaged, truncated or of another key; it has been removed.
    Damaged,
}

/// One cache folder.
#[derive(Clone, Debug)]
pub struct DiskCache {
    dir: PathBuf,
}

/// Entries and bytes in a cache folder.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    pub entries: u64,
    pub bytes: u64,
}

impl DiskCache {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        DiskCache { dir: dir.into() }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn load(&self, key: &KernelKey) -> Lookup {
        let path = self.dir.join(key.file_name());
        match fs::read(&path) {
            Ok(bytes) => match decode(key, &bytes) {
                Some(image) => Lookup::Hit(image),
                None => {
                    let _ = fs::remove_file(&path);
                    Lookup::Damaged
                }
            },
            Err(_) => Lookup::Miss,
        }
    }

    /// Writes the entry whole or not at all (a temporary file renamed into place); `write` is
    /// how the bytes reach the file (tests pass one that fails as a full disk does).
    pub fn store_with(&self, key: &KernelKey, image: &[u8], write: impl FnOnce(&mut fs::File, &[u8]) -> io::Result<()>) -> io::Result<()> {
        fs::create_dir_all(&self.dir)?;
        let mut tmp = tempfile::Builder::new().prefix(TMP_PREFIX).tempfile_in(&self.dir)?;
        write(tmp.as_file_mut(), &encode(key, image))?;
        tmp.persist(self.dir.join(key.file_name())).map_err(|e| e.error)?;
        Ok(())
    }

    pub fn store(&self, key: &KernelKey, image: &[u8]) -> io::Result<()> {
        self.store_with(key, image, |f, bytes| f.write_all(bytes))
    }

    fn files(&self) -> Vec<(PathBuf, String, fs::Metadata)> {
        let Ok(rd) = fs::read_dir(&self.dir) else { return Vec::new() };
        rd.filter_map(|e| {
            let e = e.ok()?;
            let name = e.file_name().into_string().ok()?;
            let meta = e.metadata().ok()?;
            meta.is_file().then(|| (e.path(), name, meta))
        })
        .collect()
    }

    /// Removes the entries of other gpupc versions and temporary files left by processes that
    /// died while writing; returns how many files went.
    pub fn prune(&self) -> usize {
        let ours = format!("{VERSION}-");
        let now = SystemTime::now();
        let mut removed = 0;
        for (path, name, meta) in self.files() {
            let old_entry = name.ends_with(SUFFIX) && !name.starts_with(&ours);
            let stale_tmp = name.starts_with(TMP_PREFIX)
                && meta.modified().ok().and_then(|m| now.duration_since(m).ok()).is_some_and(|age| age > STALE_TMP);
            if (old_entry || stale_tmp) && fs::remove_file(&path).is_ok() {
                removed += 1;
            }
        }
        removed
    }

    pub fn usage(&self) -> Usage {
        self.files()
            .iter()
            .filter(|(_, name, _)| name.ends_with(SUFFIX))
            .fold(Usage::default(), |u, (_, _, m)| Usage { entries: u.entries + 1, bytes: u.bytes + m.len() })
    }

    /// Removes every entry (of every version); returns how many went.
    pub fn clear(&self) -> usize {
        self.files()
            .iter()
            .filter(|(_, name, _)| name.ends_with(SUFFIX) || name.starts_with(TMP_PREFIX))
            .filter(|(path, _, _)| fs::remove_file(path).is_ok())
            .count()
    }
}

/// Where the cache lives for this process: set by the R package from its option, else the
/// environment variable `GPUPC_KERNEL_CACHE`, else the user's cache folder. `None`: no cache.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Setting {
    Default,
    Off,
    At(PathBuf),
}

fn setting() -> &'static Mutex<Setting> {
    static S: OnceLock<Mutex<Setting>> = OnceLock::new();
    S.get_or_init(|| Mutex::new(Setting::Default))
}

/// Sets the folder (`Some`) or turns the cache off (`None`) for the rest of the process.
pub fn set_dir(dir: Option<PathBuf>) {
    *setting().lock().unwrap_or_else(|e| e.into_inner()) = match dir {
        Some(d) => Setting::At(d),
        None => Setting::Off,
    };
}

/// The folder in use, `None` when the cache is off.
pub fn current() -> Option<DiskCache> {
    let s = setting().lock().unwrap_or_else(|e| e.into_inner()).clone();
    let dir = match s {
        Setting::Off => return None,
        Setting::At(d) => d,
        Setting::Default => default_dir()?,
    };
    let cache = DiskCache::new(dir);
    pruned_once(&cache);
    Some(cache)
}

/// `GPUPC_KERNEL_CACHE` ("" or "off": no cache), else what R's `tools::R_user_dir("gpupc",
/// "cache")` gives on Linux: `$R_USER_CACHE_DIR/R/gpupc`, `$XDG_CACHE_HOME/R/gpupc` or
/// `~/.cache/R/gpupc`.
fn default_dir() -> Option<PathBuf> {
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(v) = std::env::var_os("GPUPC_KERNEL_CACHE") {
        return (!v.is_empty() && v != "off").then(|| PathBuf::from(v));
    }
    let base = var("R_USER_CACHE_DIR").or_else(|| var("XDG_CACHE_HOME")).or_else(|| var("HOME").map(|h| h.join(".cache")))?;
    Some(base.join("R").join("gpupc"))
}

fn pruned_once(cache: &DiskCache) {
    static DONE: OnceLock<Mutex<Vec<PathBuf>>> = OnceLock::new();
    let mut done = DONE.get_or_init(|| Mutex::new(Vec::new())).lock().unwrap_or_else(|e| e.into_inner());
    if !done.iter().any(|d| d == cache.dir()) {
        done.push(cache.dir().to_path_buf());
        cache.prune();
    }
}

fn notices() -> &'static Mutex<(bool, Option<String>)> {
    static N: OnceLock<Mutex<(bool, Option<String>)>> = OnceLock::new();
    N.get_or_init(|| Mutex::new((false, None)))
}

/// Records that the cache could not be written; only the first such event of the process is
/// kept, so the user hears of it once.
pub fn notice_write_failure(dir: &Path, err: &io::Error) {
    let mut n = notices().lock().unwrap_or_else(|e| e.into_inner());
    if !n.0 {
        n.0 = true;
        n.1 = Some(format!(
            "gpupc: the kernel cache {} cannot be written ({err}); kernels are compiled in memory for this process",
            dir.display()
        ));
    }
}

/// The notice not yet shown, if any (taken: shown once).
pub fn take_notice() -> Option<String> {
    notices().lock().unwrap_or_else(|e| e.into_inner()).1.take()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(src: &str) -> KernelKey {
        KernelKey::new("gauss-base", src, &["--fmad=false".into()], (13, 0), "sm_90")
    }

    #[test]
    fn keys_change_with_everything_that_changes_the_image() {
        let k = key("kernel");
        assert_eq!(k, key("kernel"));
        assert_ne!(k.file_name(), key("kernel2").file_name());
        let opts = KernelKey::new("gauss-base", "kernel", &["--fmad=true".into()], (13, 0), "sm_90");
        let nvrtc = KernelKey::new("gauss-base", "kernel", &["--fmad=false".into()], (12, 8), "sm_90");
        let arch = KernelKey::new("gauss-base", "kernel", &["--fmad=false".into()], (13, 0), "sm_80");
        let fam = KernelKey::new("gauss-sets-l8", "kernel", &["--fmad=false".into()], (13, 0), "sm_90");
        for other in [opts, nvrtc, arch, fam] {
            assert_ne!(k.file_name(), other.file_name());
        }
        assert!(k.file_name().starts_with(&format!("{VERSION}-gauss-base-")));
    }

    #[test]
    fn an_entry_comes_back_as_it_was_stored() {
        let dir = tempfile::tempdir().unwrap();
        let c = DiskCache::new(dir.path().join("new/sub"));
        let k = key("a");
        assert_eq!(c.load(&k), Lookup::Miss);
        c.store(&k, b"image bytes").unwrap();
        assert_eq!(c.load(&k), Lookup::Hit(b"image bytes".to_vec()));
        assert_eq!(c.usage().entries, 1);
        // no temporary file is left behind
        assert_eq!(fs::read_dir(c.dir()).unwrap().count(), 1);
    }

    #[test]
    fn a_truncated_or_damaged_entry_is_found_and_removed() {
        let dir = tempfile::tempdir().unwrap();
        let c = DiskCache::new(dir.path());
        let k = key("a");
        let path = dir.path().join(k.file_name());
        let whole = encode(&k, &[7u8; 1000]);
        for bad in [whole[..whole.len() - 1].to_vec(), whole[..10].to_vec(), Vec::new(), {
            let mut b = whole.clone();
            b[whole.len() - 5] ^= 1;
            b
        }] {
            fs::write(&path, &bad).unwrap();
            assert_eq!(c.load(&k), Lookup::Damaged);
            assert!(!path.exists());
        }
        // an entry of another key at this key's file name (a hash collision) is not used
        fs::write(&path, encode(&key("b"), b"other")).unwrap();
        assert_eq!(c.load(&k), Lookup::Damaged);
        c.store(&k, b"good").unwrap();
        assert_eq!(c.load(&k), Lookup::Hit(b"good".to_vec()));
    }

    #[test]
    fn concurrent_writers_leave_one_whole_entry() {
        let dir = tempfile::tempdir().unwrap();
        let c = DiskCache::new(dir.path());
        let k = key("a");
        let image: Vec<u8> = (0..200_000u32).map(|i| i as u8).collect();
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    for _ in 0..10 {
                        c.store(&k, &image).unwrap();
                        // a reader never sees a partial entry
                        match c.load(&k) {
                            Lookup::Hit(got) => assert_eq!(got, image),
                            other => panic!("{other:?}"),
                        }
                    }
                });
            }
        });
        assert_eq!(fs::read_dir(c.dir()).unwrap().count(), 1);
    }

    #[test]
    fn a_folder_that_cannot_be_written_or_a_full_disk_is_an_error_not_an_entry() {
        let dir = tempfile::tempdir().unwrap();
        // a file where the folder should be: nothing can be created under it (as root too)
        let file = dir.path().join("file");
        fs::write(&file, b"x").unwrap();
        let c = DiskCache::new(file.join("cache"));
        assert!(c.store(&key("a"), b"img").is_err());
        assert_eq!(c.load(&key("a")), Lookup::Miss);
        // a full disk: the write fails, no entry and no temporary file remain
        let c = DiskCache::new(dir.path().join("full"));
        let full = |_: &mut fs::File, _: &[u8]| Err(io::Error::from_raw_os_error(28));
        assert!(c.store_with(&key("a"), b"img", full).is_err());
        assert_eq!(c.load(&key("a")), Lookup::Miss);
        assert_eq!(fs::read_dir(c.dir()).unwrap().count(), 0);
    }

    #[test]
    fn prune_removes_other_versions_and_stale_temporaries_only() {
        let dir = tempfile::tempdir().unwrap();
        let c = DiskCache::new(dir.path());
        c.store(&key("a"), b"ours").unwrap();
        fs::write(dir.path().join("0.0.1-gauss-base-0123456789abcdef.kcache"), b"old").unwrap();
        let fresh_tmp = dir.path().join(".tmp-fresh");
        fs::write(&fresh_tmp, b"being written").unwrap();
        let stale_tmp = dir.path().join(".tmp-stale");
        fs::write(&stale_tmp, b"left behind").unwrap();
        let old = SystemTime::now() - Duration::from_secs(2 * 3600);
        fs::File::options().write(true).open(&stale_tmp).unwrap().set_modified(old).unwrap();
        fs::write(dir.path().join("unrelated.txt"), b"not ours").unwrap();
        assert_eq!(c.prune(), 2);
        assert_eq!(c.load(&key("a")), Lookup::Hit(b"ours".to_vec()));
        assert!(fresh_tmp.exists() && !stale_tmp.exists());
        assert!(dir.path().join("unrelated.txt").exists());
        assert_eq!(c.usage().entries, 1);
        assert_eq!(c.clear(), 2); // the entry and the fresh temporary; never unrelated files
        assert!(dir.path().join("unrelated.txt").exists());
        assert_eq!(c.usage(), Usage::default());
    }

    #[test]
    fn the_write_failure_notice_is_given_once() {
        let e = io::Error::from_raw_os_error(28);
        notice_write_failure(Path::new("/x"), &e);
        notice_write_failure(Path::new("/y"), &e);
        let n = take_notice().expect("a notice");
        assert!(n.contains("/x") && n.contains("compiled in memory"), "{n}");
        assert_eq!(take_notice(), None);
    }
}
