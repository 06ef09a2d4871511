//! The database files hold visitor details and webhook signing secrets:
//! nobody but the service's own user may read them. The folder Parley
//! creates for them is 0700 and the files are 0600, tightened on every
//! start so an older installation is fixed too.

use std::io;
use std::path::{Path, PathBuf};

#[cfg(unix)]
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};

/// Creates the folder (0700) and an empty database file (0600) if they do
/// not exist: SQLite gives its -wal and -shm files the database file's mode.
pub(super) fn prepare(path: &Path) -> io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        if !dir.exists() {
            let mut builder = std::fs::DirBuilder::new();
            builder.recursive(true);
            #[cfg(unix)]
            builder.mode(0o700);
            builder.create(dir)?;
        } else {
            warn_if_open(dir);
        }
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(false);
    #[cfg(unix)]
    options.mode(0o600);
    options.open(path)?;
    Ok(())
}

/// Sets 0600 on the database file and its -wal and -shm companions.
pub(super) fn restrict(path: &Path) -> io::Result<()> {
    for file in companions(path) {
        #[cfg(unix)]
        match std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

fn companions(path: &Path) -> [PathBuf; 3] {
    let with = |suffix: &str| {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        PathBuf::from(name)
    };
    [path.to_owned(), with("-wal"), with("-shm")]
}

/// A folder Parley did not create is left as it is, but an operator
/// should hear that others can look into it.
fn warn_if_open(dir: &Path) {
    #[cfg(unix)]
    if let Ok(meta) = std::fs::metadata(dir)
        && meta.permissions().mode() & 0o007 != 0
    {
        tracing::warn!(folder = %dir.display(), "the database folder is open to other users; consider chmod 700");
    }
}
