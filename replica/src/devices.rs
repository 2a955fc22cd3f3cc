//! The database's devices: the [`DeviceModel`] of its configuration made
//! into `device::Device`s, and the lookup from a directory to its device.
//!
//! A path is on the device of the closest placed directory holding it
//! (a table directory is inside a data or flush directory; the commit
//! log's directory is inside the first data directory, unless placed
//! itself); a path inside no placed directory is on no modelled device.

use std::path::{Path, PathBuf};

use device::{Device, DeviceStats};

use crate::config::DeviceModel;
use crate::error::Error;
use crate::sync::Arc;

/// The devices of an open database.
#[derive(Debug, Default)]
pub(crate) struct Devices {
    devices: Vec<Arc<Device>>,
    /// Placed directories and their devices, longest path first (so the
    /// first one holding a path is the closest).
    placements: Vec<(PathBuf, Arc<Device>)>,
}

impl Devices {
    /// The devices of `model` (which the configuration validated).
    ///
    /// # Errors
    /// [`Error::InvalidOption`] naming `devices` if the device crate
    /// refuses a device (the validation makes that impossible).
    pub(crate) fn new(model: &DeviceModel) -> Result<Self, Error> {
        let devices = model
            .devices
            .iter()
            .map(|spec| {
                Device::new(spec.name.clone(), spec.bandwidth).map_err(|e| Error::InvalidOption {
                    name: "devices",
                    value: format!("{}={}", spec.name, spec.bandwidth),
                    expected: e.to_string(),
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut placements: Vec<(PathBuf, Arc<Device>)> = model
            .placements
            .iter()
            .filter_map(|p| {
                let device = devices.iter().find(|d| d.name() == p.device)?;
                Some((p.dir.clone(), Arc::clone(device)))
            })
            .collect();
        placements.sort_by_key(|(dir, _)| std::cmp::Reverse(dir.components().count()));
        Ok(Devices {
            devices,
            placements,
        })
    }

    /// The device `path` is on, if any.
    pub(crate) fn for_path(&self, path: &Path) -> Option<Arc<Device>> {
        self.placements
            .iter()
            .find(|(dir, _)| path.starts_with(dir))
            .map(|(_, device)| Arc::clone(device))
    }

    /// Every device's counters, in the order the model defines them.
    pub(crate) fn stats(&self) -> Vec<DeviceStats> {
        self.devices.iter().map(|d| d.stats()).collect()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_path_is_on_the_closest_placed_directory_that_holds_it() {
        let mut model = DeviceModel::default();
        model
            .add_device("data", 10)
            .add_device("log", 20)
            .place("/d", "data")
            .place("/d/replica.commitlog", "log");
        let devices = Devices::new(&model).unwrap();
        let name = |p: &str| devices.for_path(Path::new(p)).map(|d| d.name().to_owned());
        assert_eq!(name("/d/users").as_deref(), Some("data"));
        assert_eq!(name("/d").as_deref(), Some("data"));
        assert_eq!(name("/d/replica.commitlog").as_deref(), Some("log"));
        assert_eq!(name("/dx/users"), None, "a sibling is not inside");
        assert_eq!(name("/elsewhere"), None);
        let stats = devices.stats();
        assert_eq!(stats.len(), 2);
        assert_eq!((stats[1].name.as_str(), stats[1].bandwidth), ("log", 20));
        assert!(Devices::default().for_path(Path::new("/d")).is_none());
    }
}
