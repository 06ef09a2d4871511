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

/// The streams one client address may hold, at most half the connection
/// cap: streams and long polls answer whole requests, so the overload
/// rule never closes them, and one address must not be able to hold every
/// connection with them.
pub fn fit_streams_per_address(wanted: usize, max_connections: usize) -> usize {
    let room = (max_connections / 2).max(1);
    if room < wanted {
        tracing::warn!(
            wanted,
            allowed = room,
            max_connections,
            "PARLEY_STREAMS_PER_ADDRESS is more than half the connection cap; one address may hold fewer streams"
        );
    }
    wanted.min(room)
}

/// Streams all addresses together may hold: the connection cap less a
/// reserve for every other request (an eighth of the cap, and at least a
/// few connections), so a handful of addresses, or one IPv6 customer with
/// many /64s, holding streams cannot make `/health` unreachable.
pub fn streams_total(max_connections: usize) -> usize {
    let reserve = (max_connections / 8).max((max_connections / 2).min(16));
    max_connections.saturating_sub(reserve).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_address_holds_at_most_half_the_connections_in_streams() {
        assert_eq!(fit_streams_per_address(200, 10_000), 200);
        assert_eq!(fit_streams_per_address(200, 128), 64);
        assert_eq!(fit_streams_per_address(200, 1), 1);
    }

    #[test]
    fn some_connections_are_always_kept_from_streams() {
        assert_eq!(streams_total(10_000), 8_750);
        assert_eq!(streams_total(128), 112);
        assert_eq!(streams_total(3), 2);
        assert_eq!(streams_total(1), 1);
    }
}
