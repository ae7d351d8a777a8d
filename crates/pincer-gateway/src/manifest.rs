//! The signed agent manifest, `GET /.well-known/asap/manifest.json`: who
//! this agent is, where it listens, what it offers, and the public key that
//! signed all of it.
//!
//! The document has three members (the shape the ASAP protocol's signed
//! manifests use):
//!
//! ```json
//! {"manifest": {"id": "urn:pincer:agent:…", "name": "…", "version": "…",
//!               "description": "…", "endpoints": {…}, "capabilities": […],
//!               "auth": {…}, "public_key": {"alg": "ed25519", "key": "BASE64"},
//!               "issued": "RFC 3339"},
//!  "signature": {"alg": "ed25519", "canonicalization": "RFC8785",
//!                "signature": "BASE64 of the 64-byte signature"},
//!  "public_key": "BASE64 of the 32-byte key"}
//! ```
//!
//! `signature.signature` is the Ed25519 signature of the RFC 8785 (JCS)
//! canonical bytes of the `manifest` member alone ([`crate::jcs`]); base64
//! is the standard alphabet with padding. The key is also inside
//! `manifest`, so it is covered by the signature; the top-level copy is for
//! verifiers that expect it there. The `id` is derived from the key
//! (`urn:pincer:agent:` and the first 32 hex characters of the key's
//! SHA-256), so a manifest with another key is another agent.
//!
//! The manifest is built and signed once at start from the configured
//! addresses, never from a request's `Host` header: the gateway will not
//! sign a document naming whatever host a client claims.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use ed25519_dalek::{Signer as _, SigningKey};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// What the manifest says about this agent.
#[derive(Debug, Clone)]
pub struct ManifestInfo {
    /// `[agent] agent_id`.
    pub name: String,
    /// `http://HOST:PORT` (or the public origin behind a proxy).
    pub base_url: String,
}

/// What the gateway offers, as the manifest lists it.
pub const CAPABILITIES: &[&str] = &[
    "chat.http",
    "chat.websocket",
    "sessions",
    "approvals",
    "audit",
    "memory.search",
    "hardware",
    "status",
    "metrics",
];

/// The agent's URN for `key`.
pub fn urn(key: &ed25519_dalek::VerifyingKey) -> String {
    let digest = crate::keys::hex(&Sha256::digest(key.as_bytes()));
    format!("urn:pincer:agent:{}", &digest[..32])
}

/// The unsigned `manifest` member.
pub fn body(key: &SigningKey, info: &ManifestInfo) -> Value {
    let public = key.verifying_key();
    let base = info.base_url.trim_end_matches('/');
    let ws = if let Some(rest) = base.strip_prefix("https://") {
        format!("wss://{rest}")
    } else if let Some(rest) = base.strip_prefix("http://") {
        format!("ws://{rest}")
    } else {
        base.to_string()
    };
    json!({
        "id": urn(&public),
        "name": info.name,
        "version": env!("CARGO_PKG_VERSION"),
        "description": "a pincer agent: every tool call passes one policy gate and lands in a hash-chained audit trail",
        "endpoints": {
            "http": format!("{base}/api"),
            "websocket": format!("{ws}/ws"),
            "pair": format!("{base}/pair"),
            "health": format!("{base}/health"),
            "metrics": format!("{base}/metrics"),
            "manifest": format!("{base}/.well-known/asap/manifest.json"),
        },
        "capabilities": CAPABILITIES,
        "auth": {
            "scheme": "bearer",
            "websocket": "subprotocol bearer.TOKEN (offer pincer.v1 too)",
            "pairing": "POST /pair with the six-digit code shown on the gateway's terminal",
        },
        "public_key": {"alg": "ed25519", "key": STANDARD.encode(public.as_bytes())},
        "issued": pincer_core::message::Timestamp::now().to_string(),
    })
}

/// The signed document.
pub fn signed(key: &SigningKey, info: &ManifestInfo) -> Value {
    let manifest = body(key, info);
    let bytes = crate::jcs::canonicalize(&manifest);
    let sig = key.sign(&bytes);
    json!({
        "manifest": manifest,
        "signature": {
            "alg": "ed25519",
            "canonicalization": "RFC8785",
            "signature": STANDARD.encode(sig.to_bytes()),
        },
        "public_key": STANDARD.encode(key.verifying_key().as_bytes()),
    })
}

/// Why a manifest does not verify.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum VerifyError {
    #[error("field `{0}` is missing or not a string")]
    Field(&'static str),
    #[error("field `{0}` is not valid base64 of the right length")]
    Encoding(&'static str),
    #[error("the top-level public_key differs from manifest.public_key.key")]
    KeyMismatch,
    #[error("the signature does not match the manifest")]
    Signature,
}

/// Verifies a signed manifest with the key it carries (and says which
/// field is wrong). Pincer's own check; the tests also verify with an
/// independent implementation.
pub fn verify(doc: &Value) -> Result<(), VerifyError> {
    fn text<'a>(v: Option<&'a Value>, f: &'static str) -> Result<&'a str, VerifyError> {
        v.and_then(Value::as_str).ok_or(VerifyError::Field(f))
    }
    let key_b64 = text(doc.get("public_key"), "public_key")?;
    let inner = text(
        doc.pointer("/manifest/public_key/key"),
        "manifest.public_key.key",
    )?;
    if key_b64 != inner {
        return Err(VerifyError::KeyMismatch);
    }
    let sig_b64 = text(doc.pointer("/signature/signature"), "signature.signature")?;
    let key: [u8; 32] = STANDARD
        .decode(key_b64)
        .ok()
        .and_then(|b| b.try_into().ok())
        .ok_or(VerifyError::Encoding("public_key"))?;
    let sig: [u8; 64] = STANDARD
        .decode(sig_b64)
        .ok()
        .and_then(|b| b.try_into().ok())
        .ok_or(VerifyError::Encoding("signature.signature"))?;
    let key = ed25519_dalek::VerifyingKey::from_bytes(&key)
        .map_err(|_| VerifyError::Encoding("public_key"))?;
    let manifest = doc.get("manifest").ok_or(VerifyError::Field("manifest"))?;
    key.verify_strict(
        &crate::jcs::canonicalize(manifest),
        &ed25519_dalek::Signature::from_bytes(&sig),
    )
    .map_err(|_| VerifyError::Signature)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signed_manifest_verifies_and_any_change_breaks_it() {
        let key = SigningKey::from_bytes(&[7u8; 32]);
        let info = ManifestInfo {
            name: "pincer".into(),
            base_url: "http://127.0.0.1:18789".into(),
        };
        let doc = signed(&key, &info);
        verify(&doc).expect("verifies");
        assert_eq!(
            doc.pointer("/manifest/endpoints/websocket"),
            Some(&json!("ws://127.0.0.1:18789/ws"))
        );
        let mut changed = doc.clone();
        changed["manifest"]["endpoints"]["http"] = json!("http://evil.example/api");
        assert_eq!(verify(&changed), Err(VerifyError::Signature));
        let mut other = doc.clone();
        let k2 = SigningKey::from_bytes(&[8u8; 32]);
        other["public_key"] = json!(STANDARD.encode(k2.verifying_key().as_bytes()));
        assert_eq!(verify(&other), Err(VerifyError::KeyMismatch));
        // Member order does not matter: JCS sorts them.
        let reordered: Value =
            serde_json::from_str(&serde_json::to_string_pretty(&doc).expect("text")).expect("json");
        verify(&reordered).expect("verifies");
    }
}
