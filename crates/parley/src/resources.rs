//! Operating-system resources the service needs before it serves.

/// File descriptors kept free of connections: the database files, logs and
/// outgoing webhook calls need some too.
const RESERVED_FILES: u64 = 128;

/// Raises this process's open-file limit as far as it may go and returns
/// the connection cap that fits under it, so a full connection table never
/// leaves the database or the delivery worker without a descriptor.
pub fn fit_connection_cap(wanted: usize) -> usize {
    match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(limit) => {
            let room = usize::try_from(limit.saturating_sub(RESERVED_FILES).max(16)).unwrap_or(usize::MAX);
            if room < wanted {
                tracing::warn!(
                    wanted,
                    allowed = room,
                    open_file_limit = limit,
                    "the open-file limit is too low for PARLEY_MAX_CONNECTIONS; serving fewer connections at once"
                );
            }
            wanted.min(room)
        }
        Err(e) => {
            tracing::warn!(error = %e, "could not read the open-file limit");
            wanted
        }
    }
}
