//! TLS to PostgreSQL, through rustls.
//!
//! `sslmode` keeps libpq's meaning: `disable` never encrypts, `prefer`
//! (the default) encrypts when the server offers it, `require` always
//! encrypts. Like libpq, neither checks the server's certificate (managed
//! databases often present one from a private authority); `verify-full`
//! (or `verify-ca`, which is treated the same) also checks that the
//! certificate chains to the web's public roots, or to the authority in
//! `sslrootcert=PATH`, and names the host.

use std::path::PathBuf;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio_postgres_rustls::MakeRustlsConnect;

/// How the server's certificate is checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Verify {
    /// Encryption only (libpq's `prefer` and `require`).
    None,
    /// Chain and host name, against these roots (the public ones if none).
    Full(Option<PathBuf>),
}

pub(super) fn connector(verify: &Verify) -> Result<MakeRustlsConnect, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS setup: {e}"))?;
    let config = match verify {
        Verify::None => builder.dangerous().with_custom_certificate_verifier(Arc::new(EncryptOnly(provider))).with_no_client_auth(),
        Verify::Full(root) => {
            let mut roots = RootCertStore::empty();
            match root {
                Some(path) => {
                    for cert in CertificateDer::pem_file_iter(path).map_err(|e| format!("sslrootcert {}: {e}", path.display()))? {
                        let cert = cert.map_err(|e| format!("sslrootcert {}: {e}", path.display()))?;
                        roots.add(cert).map_err(|e| format!("sslrootcert {}: {e}", path.display()))?;
                    }
                }
                None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
            }
            builder.with_root_certificates(roots).with_no_client_auth()
        }
    };
    Ok(MakeRustlsConnect::new(config))
}

/// Accepts any certificate but still checks that the server holds its key,
/// as libpq's `sslmode=require` does.
#[derive(Debug)]
struct EncryptOnly(Arc<CryptoProvider>);

impl ServerCertVerifier for EncryptOnly {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
