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
use crate::ebpf::symbolize::maps::Backing;
use crate::ebpf::symbolize::maps::MapsEntry;
use crate::ebpf::symbolize::module::{FileKey, open_mapped};

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

    pub fn len(&self) -> usize {
        self.by_build_id.len()
            + self
                .by_file
                .values()
                .filter(|s| matches!(s, Slot::Loaded { .. }))
                .count()
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
        image.reservation = self
            .budget
            .try_reserve(Use::Ebpf, Priority::Low, image.bytes);
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
    /// and the budget's low-priority share.
    fn make_room(&mut self, incoming: u64) {
        while !self.by_file.is_empty()
            && (self.bytes + incoming > MAX_BYTES || self.budget.over(Priority::Low))
        {
            let Some(oldest) = self
                .by_file
                .iter()
                .filter_map(|(k, s)| match s {
                    Slot::Loaded { last_used, .. } => Some((*last_used, k.clone())),
                    Slot::Failed => None,
                })
                .min_by_key(|(t, _)| *t)
                .map(|(_, k)| k)
            else {
                return;
            };
            self.evict(&oldest);
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
