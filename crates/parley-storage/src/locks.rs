//! The numbers of the advisory locks Parley takes on PostgreSQL, in one
//! place so that no two uses share one by accident. Fixed locks are
//! "parle" in ASCII followed by a letter of their own; locks named at run
//! time (a task, a sign-in key) are a stable hash of their name, the same
//! in every instance and every version.

/// Migrations, applied by one starting instance at a time.
pub(crate) const MIGRATIONS: i64 = 0x7061_726c_6579;
/// The verification limits' counts, taken by units that may send.
pub(crate) const VERIFICATION_SENDS: i64 = 0x7061_726c_6576;
/// The test suites' template database, built by one test at a time.
#[cfg(any(test, feature = "testing"))]
pub(crate) const TEST_TEMPLATE: i64 = 0x7061_726c_6574;

/// The lock that stands for `name`.
pub(crate) fn named(name: &str) -> i64 {
    i64::from_ne_bytes(fnv1a(name.bytes()).to_ne_bytes())
}

/// FNV-1a: stable across builds and platforms, unlike the standard
/// library's hasher.
pub(crate) fn fnv1a(bytes: impl IntoIterator<Item = u8>) -> u64 {
    bytes.into_iter().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3))
}
