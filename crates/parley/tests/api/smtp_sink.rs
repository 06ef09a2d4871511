//! A real SMTP server on loopback for tests: it speaks enough SMTP over TCP
//! for a real client (lettre) to deliver, and keeps every message.

#![allow(dead_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

#[derive(Clone, Debug)]
pub struct Mail {
    pub from: String,
    pub to: Vec<String>,
    /// The DATA section, with quoted-printable soft breaks and `=3D` undone
    /// so codes and links can be read from it.
    pub data: String,
}

/// How the sink answers: every message taken, the server unavailable
/// for now (421 to MAIL FROM, a transient refusal), or every recipient
/// refused for good (550 to RCPT TO).
const ACCEPT: u8 = 0;
const UNAVAILABLE: u8 = 1;
const NO_SUCH_RECIPIENT: u8 = 2;
/// A permanent refusal that is about the sender, not the recipient: 550
/// with the enhanced code of a policy (5.7.1) to MAIL FROM.
const RELAY_DENIED: u8 = 3;

pub struct SmtpSink {
    pub port: u16,
    /// Spoken inside TLS from the first byte (`smtps://`), with the push
    /// peers' certificate (signed by the test CA).
    tls: bool,
    refuse: Arc<AtomicU8>,
    mails: tokio::sync::Mutex<mpsc::UnboundedReceiver<Mail>>,
}

/// The user name and password a sink takes (`AUTH PLAIN`), when it asks
/// for one.
type Login = Option<(&'static str, &'static str)>;

impl SmtpSink {
    pub async fn start() -> Self {
        Self::listen(None, None).await
    }

    /// The sink behind implicit TLS, its certificate for `localhost`
    /// signed by the test CA (`fixtures/push/ca.pem`).
    pub async fn start_tls() -> Self {
        Self::start_tls_with_login(None).await
    }

    /// The sink behind implicit TLS, taking mail only from a client that
    /// signs in as `login` (`AUTH PLAIN`, answering 535 to anything else).
    pub async fn start_tls_with_login(login: Login) -> Self {
        use rustls::pki_types::pem::PemObject;
        let _ = rustls::crypto::ring::default_provider().install_default();
        let dir = crate::push_peers::FIXTURES;
        let certs =
            rustls::pki_types::CertificateDer::pem_file_iter(format!("{dir}/peer.pem")).unwrap().collect::<Result<Vec<_>, _>>().unwrap();
        let key = rustls::pki_types::PrivateKeyDer::from_pem_file(format!("{dir}/peer.key")).unwrap();
        let config = rustls::ServerConfig::builder().with_no_client_auth().with_single_cert(certs, key).unwrap();
        Self::listen(Some(tokio_rustls::TlsAcceptor::from(Arc::new(config))), login).await
    }

    async fn listen(tls: Option<tokio_rustls::TlsAcceptor>, login: Login) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let (tx, rx) = mpsc::unbounded_channel();
        let refuse = Arc::new(AtomicU8::new(ACCEPT));
        let refusing = refuse.clone();
        let wrapped = tls.is_some();
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let (tx, refusing, tls) = (tx.clone(), refusing.clone(), tls.clone());
                tokio::spawn(async move {
                    let _ = match tls {
                        Some(acceptor) => match acceptor.accept(socket).await {
                            Ok(stream) => session(stream, tx, refusing, login).await,
                            Err(_) => Ok(()),
                        },
                        None => session(socket, tx, refusing, login).await,
                    };
                });
            }
        });
        Self { port, tls: wrapped, refuse, mails: tokio::sync::Mutex::new(rx) }
    }

    pub fn url(&self) -> String {
        if self.tls { format!("smtps://localhost:{}", self.port) } else { format!("smtp://127.0.0.1:{}", self.port) }
    }

    /// From now on, answer that the service is not available (421): a
    /// refusal that may pass another time.
    pub fn unavailable(&self) {
        self.refuse.store(UNAVAILABLE, Ordering::SeqCst);
    }

    /// From now on, take every message again.
    pub fn accept(&self) {
        self.refuse.store(ACCEPT, Ordering::SeqCst);
    }

    /// From now on, refuse every recipient for good (550).
    pub fn refuse_recipients(&self) {
        self.refuse.store(NO_SUCH_RECIPIENT, Ordering::SeqCst);
    }

    /// From now on, refuse to relay for the sender (550 5.7.1), as a
    /// server does that was not set up for Parley.
    pub fn deny_relay(&self) {
        self.refuse.store(RELAY_DENIED, Ordering::SeqCst);
    }

    pub async fn next(&self) -> Mail {
        let mut rx = self.mails.lock().await;
        tokio::time::timeout(Duration::from_secs(10), rx.recv()).await.expect("a mail within 10 s").expect("sink open")
    }

    /// Messages received so far, without waiting.
    pub async fn drain(&self) -> Vec<Mail> {
        let mut rx = self.mails.lock().await;
        let mut all = Vec::new();
        while let Ok(m) = rx.try_recv() {
            all.push(m);
        }
        all
    }
}

async fn session<S>(socket: S, tx: mpsc::UnboundedSender<Mail>, refuse: Arc<AtomicU8>, login: Login) -> std::io::Result<()>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite,
{
    let (read, mut write) = tokio::io::split(socket);
    let mut lines = BufReader::new(read).lines();
    write.write_all(b"220 sink.test ESMTP ready\r\n").await?;
    let (mut from, mut to) = (String::new(), Vec::new());
    let mut signed_in = login.is_none();
    while let Some(line) = lines.next_line().await? {
        let upper = line.to_ascii_uppercase();
        let reply: &[u8] = if upper.starts_with("EHLO") {
            if login.is_some() { b"250-sink.test\r\n250-AUTH PLAIN\r\n250 8BITMIME\r\n" } else { b"250-sink.test\r\n250 8BITMIME\r\n" }
        } else if let Some(given) = upper.starts_with("AUTH PLAIN ").then(|| line[11..].trim()) {
            use base64::Engine;
            let decoded = base64::engine::general_purpose::STANDARD.decode(given).unwrap_or_default();
            let expected = login.map(|(user, password)| format!("\0{user}\0{password}").into_bytes());
            if expected.is_some_and(|e| e == decoded) {
                signed_in = true;
                b"235 2.7.0 signed in\r\n"
            } else {
                b"535 5.7.8 wrong user name or password, says the test\r\n"
            }
        } else if upper.starts_with("MAIL FROM:") && !signed_in {
            b"530 5.7.0 sign in first\r\n"
        } else if upper.starts_with("HELO") || upper.starts_with("RSET") || upper.starts_with("NOOP") {
            b"250 OK\r\n"
        } else if upper.starts_with("MAIL FROM:") {
            let mode = refuse.load(Ordering::SeqCst);
            if mode == UNAVAILABLE {
                b"421 4.3.2 not available now, says the test\r\n"
            } else if mode == RELAY_DENIED {
                b"550 5.7.1 relaying denied, says the test\r\n"
            } else {
                from = line[10..].trim().trim_matches(['<', '>']).to_owned();
                to.clear();
                b"250 OK\r\n"
            }
        } else if upper.starts_with("RCPT TO:") {
            if refuse.load(Ordering::SeqCst) == NO_SUCH_RECIPIENT {
                b"550 5.1.1 no such mailbox, says the test\r\n"
            } else {
                to.push(line[8..].trim().trim_matches(['<', '>']).to_owned());
                b"250 OK\r\n"
            }
        } else if upper.starts_with("DATA") {
            write.write_all(b"354 end with <CRLF>.<CRLF>\r\n").await?;
            let mut data = String::new();
            while let Some(l) = lines.next_line().await? {
                if l == "." {
                    break;
                }
                data.push_str(l.strip_prefix('.').unwrap_or(&l));
                data.push_str("\r\n");
            }
            let data = data.replace("=\r\n", "").replace("=3D", "=");
            let _ = tx.send(Mail { from: from.clone(), to: to.clone(), data });
            b"250 OK queued\r\n"
        } else if upper.starts_with("QUIT") {
            write.write_all(b"221 bye\r\n").await?;
            return Ok(());
        } else {
            b"502 command not implemented\r\n"
        };
        write.write_all(reply).await?;
    }
    Ok(())
}
