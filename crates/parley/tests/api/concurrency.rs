use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use reqwest::StatusCode;
use serde_json::Value;

use crate::helpers::*;

const WRITERS: usize = 8;
const PER_WRITER: usize = 40;

/// Concurrent writers and an `after_id` poller: the poller sees every
/// message exactly once, in increasing id order.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn polling_never_skips_or_repeats_under_concurrent_writes() {
    let app = Arc::new(TestApp::spawn().await);
    let f = app.fixture("acme", &[]).await;
    let public_id = app.open_conversation("/api", &f.token, "ann", "start").await;
    let done = Arc::new(AtomicBool::new(false));

    let poller = {
        let (app, token, public_id, done) = (app.clone(), f.token.clone(), public_id.clone(), done.clone());
        tokio::spawn(async move {
            let mut seen: Vec<i64> = Vec::new();
            let mut after = 0;
            loop {
                let finished = done.load(Ordering::SeqCst);
                let (status, body) =
                    app.get(&format!("/api/v1/widget/conversations/{public_id}/messages?token={token}&after_id={after}")).await;
                assert_eq!(status, StatusCode::OK);
                let batch: Vec<i64> = body["messages"].as_array().unwrap().iter().map(|m| m["id"].as_i64().unwrap()).collect();
                if let Some(&last) = batch.last() {
                    after = last;
                }
                let empty = batch.is_empty();
                seen.extend(batch);
                // One more poll after the writers finish drains the rest.
                if finished && empty {
                    return seen;
                }
                tokio::task::yield_now().await;
            }
        })
    };

    let mut writers = Vec::new();
    for w in 0..WRITERS {
        let (app, token, public_id) = (app.clone(), f.token.clone(), public_id.clone());
        writers.push(tokio::spawn(async move {
            let mut ids = Vec::new();
            for n in 0..PER_WRITER {
                let (status, body) = app.post_message("/api", &token, &public_id, &format!("w{w} n{n}")).await;
                assert_eq!(status, StatusCode::CREATED, "{body}");
                ids.push(body["message"]["id"].as_i64().unwrap());
            }
            ids
        }));
    }
    let mut acknowledged = BTreeSet::new();
    for w in writers {
        acknowledged.extend(w.await.unwrap());
    }
    done.store(true, Ordering::SeqCst);
    let seen = poller.await.unwrap();

    assert!(seen.windows(2).all(|p| p[0] < p[1]), "ids arrive strictly increasing, so none repeats");
    let seen_set: BTreeSet<i64> = seen.iter().copied().collect();
    assert!(acknowledged.is_subset(&seen_set), "every acknowledged message was seen by the poller");
    assert_eq!(seen.len(), WRITERS * PER_WRITER + 1, "the first message plus every write");

    let (_, body): (_, Value) = app.get(&format!("/api/widget/conversations/{public_id}/messages?token={}&after_id=0", f.token)).await;
    assert_eq!(body["messages"].as_array().unwrap().len(), 100);
}
