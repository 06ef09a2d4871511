//! The domain services that the HTTP suite only reaches through routes
//! (verification, admin, webhooks and auth) driven directly: their public
//! methods on a real database (an SQLite file, or PostgreSQL with
//! `PARLEY_TEST_DATABASE_URL`), a manual clock and no HTTP server.
//!
//! They exist because these services hold rules a route test would
//! check only in passing, and a change to the HTTP layer should not be
//! what tells whether they still hold: who may administer (admins, never
//! agents or personal tokens), that a tenant never reaches another's
//! sites, operators, endpoints or conversations (the answer is "not
//! found"), what ends a session (expiry on the clock, logout, disabling,
//! a new password), how failed sign-ins and wrong codes are counted, and
//! where a webhook may point. Each test asserts what a user of the
//! service would check, on the `DomainError` variant it returns.

mod harness;

mod admin;
mod auth;
mod polls;
mod verification;
mod webhooks;
