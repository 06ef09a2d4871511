//! Integration tests: the real HTTP stack on 127.0.0.1:0 against a real
//! SQLite file in a temporary folder. One test binary, many modules, so the
//! suite links once.

mod helpers;
mod push_peers;
mod receiver;
mod s3_peer;
mod sse;

mod admin;
mod admin_tokens;
mod attachments;
mod attachments_s3;
mod automation;
mod backend_concurrency;
mod canned;
mod cli;
mod concurrency;
mod continuity;
mod continuity_mail;
mod db_copy;
mod erasure;
mod errors;
mod feed;
mod health;
mod idempotent_sends;
mod instances;
mod isolation;
mod metrics;
mod mobile_auth;
mod mobile_inbox;
mod notifications;
mod openapi;
mod push;
mod sandbox;
mod search;
mod slow_clients;
mod smtp_sink;
mod streams;
mod typing;
mod verification;
mod verification_channels;
mod web_app;
mod web_app_conversation;
mod web_browser;
mod web_integrations;
mod web_settings;
mod webhook_fairness;
mod webhook_test_events;
mod webhooks;
mod widget_config;
mod widget_conversations;
mod widget_identity;
mod widget_locale;
mod widget_messages;
mod widget_ping;
mod widget_visitors;
