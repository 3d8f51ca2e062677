//! The unwind images of every file sampled processes map, shared between processes and kept
//! within a memory bound.
//!
//! Images are keyed like the symbolizer's modules: by GNU build id when the file has one (the
//! same libc in a hundred containers is one image), else by (device, inode, path). Each image's
//! bytes are reserved in the memory budget (`use="ebpf"`, low priority: unwind tables are a
//! cache, rebuilt from the file when needed); when the budget or [`MAX_BYTES`] is reached the
//! least recently used images are dropped. A process keeps the images it uses alive through
//! its framehop modules until its maps are read again, so dropping one here only stops sharing.

use std::collections::HashMap;
use std::sync::Arc;

use super::image::Image;
use crate::budget::{Budget, Priority, Use};
use crate::components::pyroscope::ebpf::symbolize::maps::Backing;
use crate::components::pyroscope::ebpf::symbolize::maps::MapsEntry;
use crate::components::pyroscope::ebpf::symbolize::module::{FileKey, open_mapped};

/// Upper bound on unwind images held, whatever the budget says: the CFI of a few hundred
/// distinct libraries and executables.
pub const MAX_BYTES: u64 = 96 << 20;

pub(crate) type Shared = Arc<std::sync::Mutex<Image>>;

#[derive(Debug)]
enum Slot {
    Loaded {
        image: Shared,
        last_used: u64,
    },
    /// Not openable or not ELF: not tried again until evicted by [`Images::forget_failures`].
    Failed,
}

#[derive(Debug)]
pub(crate) struct Images {
    by_file: HashMap<FileKey, Slot>,
    by_build_id: HashMap<Box<[u8]>, Shared>,
    bytes: u64,
    tick: u64,
    budget: Budget,
    pub loads: u64,
    pub evictions: u64,
    pub failures: u64,
}

impl Images {
    pub fn new(budget: Budget) -> Self {
        Images {
            by_file: HashMap::new(),
            by_build_id: HashMap::new(),
            bytes: 0,
            tick: 0,
            budget,
            loads: 0,
            evictions: 0,
            failures: 0,
        }
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Distinct images held (files with the same build id share one).
    pub fn len(&self) -> usize {
        let mut seen: Vec<*const std::sync::Mutex<Image>> = self
            .by_file
            .values()
            .filter_map(|s| match s {
                Slot::Loaded { image, .. } => Some(Arc::as_ptr(image)),
                Slot::Failed => None,
            })
            .collect();
        seen.sort_unstable();
        seen.dedup();
        seen.len()
    }

    /// The image behind an executable file mapping of `pid`, loading it on first use.
    pub fn get(&mut self, pid: u32, entry: &MapsEntry, name: &Arc<str>) -> Option<Shared> {
        let key = FileKey::of(entry)?;
        self.tick += 1;
        match self.by_file.get_mut(&key) {
            Some(Slot::Loaded { image, last_used }) => {
                *last_used = self.tick;
                return Some(image.clone());
            }
            Some(Slot::Failed) => return None,
            None => {}
        }
        let Backing::File { path, deleted } = &entry.backing else {
            return None;
        };
        let loaded = open_mapped(pid, path, *deleted)
            .map_err(|e| e.to_string())
            .and_then(|file| Image::load(file, name.clone()).map_err(|e| e.to_string()));
        let mut image = match loaded {
            Ok(image) => image,
            Err(error) => {
                // The symbolizer reports unreadable files to the user; here they only mean
                // frame-pointer unwinding for that file.
                tracing::debug!(pid, module = %name, %error, "no unwind information");
                self.failures += 1;
                self.by_file.insert(key, Slot::Failed);
                return None;
            }
        };
        if let Some(build_id) = image.info.build_id.clone()
            && let Some(shared) = self.by_build_id.get(&build_id).cloned()
        {
            self.by_file.insert(
                key,
                Slot::Loaded {
                    image: shared.clone(),
                    last_used: self.tick,
                },
            );
            return Some(shared);
        }
        self.make_room(image.bytes);
        // The budget is shared with everything else: make room from our own least recently
        // used tables before giving up on this one.
        loop {
            image.reservation = self
                .budget
                .try_reserve(Use::Ebpf, Priority::Low, image.bytes);
            if image.reservation.is_some() || !self.evict_oldest() {
                break;
            }
        }
        if image.reservation.is_none() {
            self.budget.count_shed(Use::Ebpf, Priority::Low);
            tracing::debug!(module = %name, bytes = image.bytes, "memory budget refuses this unwind table; its frames use frame pointers");
            self.failures += 1;
            self.by_file.insert(key, Slot::Failed);
            return None;
        }
        self.loads += 1;
        self.bytes += image.bytes;
        let build_id = image.info.build_id.clone();
        let shared = Arc::new(std::sync::Mutex::new(image));
        if let Some(build_id) = build_id {
            self.by_build_id.insert(build_id, shared.clone());
        }
        self.by_file.insert(
            key,
            Slot::Loaded {
                image: shared.clone(),
                last_used: self.tick,
            },
        );
        Some(shared)
    }

    /// Drops least recently used images until `incoming` more bytes fit under [`MAX_BYTES`]
    /// and the budget is not over its low-priority share.
    fn make_room(&mut self, incoming: u64) {
        while self.bytes + incoming > MAX_BYTES || self.budget.over(Priority::Low) {
            if !self.evict_oldest() {
                return;
            }
        }
    }

    /// Drops the least recently used image; false when there is none.
    fn evict_oldest(&mut self) -> bool {
        let oldest = self
            .by_file
            .iter()
            .filter_map(|(k, s)| match s {
                Slot::Loaded { last_used, .. } => Some((*last_used, k.clone())),
                Slot::Failed => None,
            })
            .min_by_key(|(t, _)| *t)
            .map(|(_, k)| k);
        match oldest {
            Some(key) => {
                self.evict(&key);
                true
            }
            None => false,
        }
    }

    fn evict(&mut self, key: &FileKey) {
        let Some(Slot::Loaded { image, .. }) = self.by_file.remove(key) else {
            return;
        };
        // Other file keys naming the same image (same build id) go with it.
        self.by_file.retain(|_, s| match s {
            Slot::Loaded { image: other, .. } => !Arc::ptr_eq(other, &image),
            Slot::Failed => true,
        });
        self.by_build_id
            .retain(|_, other| !Arc::ptr_eq(other, &image));
        let bytes = image.lock().map(|i| i.bytes).unwrap_or(0);
        self.bytes = self.bytes.saturating_sub(bytes);
        self.evictions += 1;
    }

    /// Lets files that could not be read be tried again (a process may have been replaced by
    /// one we can read).
    pub fn forget_failures(&mut self) {
        self.by_file.retain(|_, s| matches!(s, Slot::Loaded { .. }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::components::pyroscope::ebpf::symbolize::maps;

    /// This process's executable mapping of `path_part`.
    fn own_entry(path_part: &str) -> MapsEntry {
        let text = std::fs::read("/proc/self/maps").expect("own maps");
        maps::parse(&text)
            .into_iter()
            .find(|e| {
                matches!(&e.backing, Backing::File { path, .. }
                    if path.to_string_lossy().contains(path_part))
            })
            .unwrap_or_else(|| panic!("no executable mapping of {path_part}"))
    }

    fn exe_name() -> String {
        std::env::current_exe()
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .expect("own executable name")
    }

    #[test]
    fn images_are_shared_and_evicted_least_recently_used_under_the_budget() {
        let pid = std::process::id();
        let exe = own_entry(&exe_name());
        let libc = own_entry("libc.so");
        let name: Arc<str> = Arc::from("x");

        // Sizes first, without a limit; a second lookup is the same image.
        let mut free = Images::new(Budget::unlimited());
        let a = free.get(pid, &exe, &name).expect("own executable has CFI");
        let b = free.get(pid, &exe, &name).expect("cached");
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(free.loads, 1);
        assert_eq!(free.len(), 1);
        let exe_bytes = a.lock().expect("lock").bytes;
        let libc_bytes = free
            .get(pid, &libc, &name)
            .expect("libc has CFI")
            .lock()
            .expect("lock")
            .bytes;
        assert_eq!(free.bytes(), exe_bytes + libc_bytes);
        assert_eq!(free.len(), 2);

        // A budget whose low-priority share (70 %) holds either file but not both: loading
        // libc after the executable evicts the executable's table.
        let limit = (exe_bytes + libc_bytes / 2) * 10 / 7;
        let budget = Budget::new(limit);
        let mut images = Images::new(budget.clone());
        drop(images.get(pid, &exe, &name).expect("fits"));
        assert_eq!(budget.used_by(Use::Ebpf), exe_bytes);
        drop(images.get(pid, &libc, &name).expect("fits after eviction"));
        assert_eq!(images.evictions, 1);
        assert_eq!(images.bytes(), libc_bytes);
        assert_eq!(budget.used_by(Use::Ebpf), libc_bytes);

        // A table larger than the whole share is refused, and its file not tried again.
        let tiny = Budget::new(libc_bytes / 2);
        let mut refused = Images::new(tiny.clone());
        assert!(refused.get(pid, &libc, &name).is_none());
        assert!(refused.get(pid, &libc, &name).is_none());
        assert_eq!((refused.failures, refused.loads), (1, 0));
        assert_eq!(tiny.used_by(Use::Ebpf), 0);
    }
}
