//! TLS to etcd: the files a command names (`--cacert`, `--cert`, `--key`, etcdctl's
//! names), read and checked before any connection, and what a failed handshake means, in
//! one line that says which side refused what. A private key's bytes are never part of a
//! message: only its file's path is.

use std::path::{Path, PathBuf};

use crate::WorldError;

/// The TLS files of a connection to etcd.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tls {
    /// The CA that signed etcd's certificate.
    pub ca: PathBuf,
    /// This client's certificate and key (etcd started with `--client-cert-auth` asks for
    /// them; the certificate's CN is the etcd user).
    pub identity: Option<(PathBuf, PathBuf)>,
}

/// What [`Tls::read`] read: PEM text.
pub(crate) struct TlsFiles {
    pub(crate) ca: Vec<u8>,
    pub(crate) identity: Option<(Vec<u8>, Vec<u8>)>,
}

impl Tls {
    /// Reads the files, checking that each holds what its flag promises.
    pub(crate) fn read(&self) -> Result<TlsFiles, WorldError> {
        let ca = pem(&self.ca, "--cacert", "CERTIFICATE")?;
        let identity = match &self.identity {
            Some((cert, key)) => Some((pem(cert, "--cert", "CERTIFICATE")?, pem(key, "--key", "PRIVATE KEY")?)),
            None => None,
        };
        Ok(TlsFiles { ca, identity })
    }

    fn cert(&self) -> Option<&Path> {
        self.identity.as_ref().map(|(cert, _)| cert.as_path())
    }
}

/// The bytes of the PEM file `path` (given as `flag`), which must hold a `what` block
/// (`PRIVATE KEY` also matches `RSA PRIVATE KEY` and `EC PRIVATE KEY`).
fn pem(path: &Path, flag: &str, what: &str) -> Result<Vec<u8>, WorldError> {
    let bytes = std::fs::read(path)
        .map_err(|e| WorldError::Config(format!("{flag} {}: cannot read it: {}", path.display(), io_reason(&e))))?;
    let text = String::from_utf8_lossy(&bytes);
    let holds = text.lines().any(|l| l.starts_with("-----BEGIN ") && l.ends_with(&format!("{what}-----")));
    if !holds {
        let want = if what == "CERTIFICATE" { "a PEM certificate" } else { "a PEM private key" };
        return Err(WorldError::Config(format!("{flag} {}: not {want}", path.display())));
    }
    Ok(bytes)
}

fn io_reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file".into(),
        std::io::ErrorKind::PermissionDenied => "permission denied".into(),
        _ => e.to_string(),
    }
}

/// Checks that the seeds and the TLS files agree: `https://` seeds need `--cacert`, TLS
/// files need `https://` seeds, and one cluster is reached one way.
pub fn check_seeds(seeds: &[String], tls: Option<&Tls>) -> Result<(), WorldError> {
    let secure = seeds.iter().filter(|s| s.starts_with("https://")).count();
    if secure != 0 && secure != seeds.len() {
        return Err(WorldError::Config("--seeds mixes https:// and http:// URLs: reach the cluster one way".into()));
    }
    match (secure != 0, tls.is_some()) {
        (true, false) => Err(WorldError::Config(
            "--seeds names https:// URLs: give --cacert (the CA that signed etcd's certificate), and --cert and --key if etcd asks for a client certificate"
                .into(),
        )),
        (false, true) if !seeds.is_empty() => Err(WorldError::Config(
            "--cacert, --cert and --key are for https:// seeds; these are http:// (plaintext)".into(),
        )),
        _ => Ok(()),
    }
}

/// Why a TLS connection to etcd failed, read from a failed request's error text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum TlsProblem {
    /// etcd's certificate is not signed by the CA we trust.
    UnknownIssuer,
    /// etcd's certificate does not name the address we dialled.
    WrongName,
    /// etcd's certificate has expired (or is not valid yet).
    Expired,
    /// etcd's certificate is revoked.
    Revoked,
    /// etcd answered in plaintext.
    NotTls,
    /// etcd wants a client certificate and we sent none.
    CertificateRequired,
    /// etcd refused our client certificate.
    CertificateRefused,
    /// etcd closed every connection right after the handshake: Go's etcd checks its
    /// `--client-crl-file` only then, so a revoked client certificate looks like this. Only
    /// a problem when a client certificate was sent (see [`TlsProblem::needs_identity`]).
    ClosedAfterHandshake,
}

impl TlsProblem {
    /// The problem `text` (an error with its causes) describes, if it is a TLS one.
    pub(crate) fn of(text: &str) -> Option<TlsProblem> {
        let has = |s: &str| text.contains(s);
        Some(if has("UnknownIssuer") || has("unknown issuer") {
            TlsProblem::UnknownIssuer
        } else if has("NotValidForName") || has("not valid for name") {
            TlsProblem::WrongName
        } else if has("invalid peer certificate: Expired")
            || has("NotValidYet")
            || (has("certificate expired") && !has("alert"))
        {
            TlsProblem::Expired
        } else if has("invalid peer certificate: Revoked") {
            TlsProblem::Revoked
        } else if has("CertificateRequired") || has("certificate required") {
            TlsProblem::CertificateRequired
        } else if has("BadCertificate")
            || has("bad certificate")
            || has("UnknownCA")
            || has("CertificateExpired")
            || has("CertificateRevoked")
            || has("CertificateUnknown")
        {
            TlsProblem::CertificateRefused
        } else if has("InvalidContentType") || has("corrupt message") || has("tls handshake eof") {
            TlsProblem::NotTls
        } else if has("broken pipe") {
            TlsProblem::ClosedAfterHandshake
        } else {
            return None;
        })
    }

    /// Whether this is a TLS problem only when a client certificate was sent (otherwise it is
    /// an ordinary outage: a member that went away mid-request).
    pub(crate) fn needs_identity(&self) -> bool {
        matches!(self, TlsProblem::ClosedAfterHandshake)
    }

    /// One line for an operator, naming the files involved (never their content).
    pub(crate) fn describe(&self, tls: Option<&Tls>, seeds: &[String]) -> String {
        let seeds = seeds.join(",");
        let ca = tls.map_or_else(|| "--cacert".to_string(), |t| format!("--cacert {}", t.ca.display()));
        let cert = tls.and_then(Tls::cert).map_or_else(|| "--cert".to_string(), |c| format!("--cert {}", c.display()));
        match self {
            TlsProblem::UnknownIssuer => format!("TLS: etcd's certificate at {seeds} is not signed by the CA in {ca}"),
            TlsProblem::WrongName => {
                format!(
                    "TLS: etcd's certificate does not name the host of {seeds}: dial a name or address it was issued for"
                )
            }
            TlsProblem::Expired => format!("TLS: etcd's certificate at {seeds} has expired (or is not valid yet)"),
            TlsProblem::Revoked => format!("TLS: etcd's certificate at {seeds} has been revoked"),
            TlsProblem::NotTls => format!(
                "TLS: etcd at {seeds} does not speak TLS (it ended the handshake): use http:// seeds, or start etcd with --cert-file"
            ),
            TlsProblem::CertificateRequired => {
                format!("TLS: etcd at {seeds} requires a client certificate: give --cert and --key")
            }
            // etcd (Go) answers a missing certificate as a bad one.
            TlsProblem::CertificateRefused if tls.and_then(Tls::cert).is_none() => {
                TlsProblem::CertificateRequired.describe(tls, &[seeds])
            }
            TlsProblem::CertificateRefused => format!(
                "TLS: etcd at {seeds} refused the client certificate in {cert}: not signed by a CA etcd trusts, expired, or revoked"
            ),
            TlsProblem::ClosedAfterHandshake => format!(
                "TLS: etcd at {seeds} refused the client certificate in {cert} after the handshake: \
                 revoked in its --client-crl-file"
            ),
        }
    }
}

/// An error and every cause under it, `: `-separated (TLS failures hide several levels
/// down a transport error).
pub(crate) fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seeds(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    fn tls() -> Tls {
        Tls { ca: "/etc/tend/ca.crt".into(), identity: Some(("/etc/tend/h1.crt".into(), "/etc/tend/h1.key".into())) }
    }

    #[test]
    fn seeds_and_files_must_agree() {
        assert!(check_seeds(&seeds(&["https://a:2379"]), Some(&tls())).is_ok());
        assert!(check_seeds(&seeds(&["http://a:2379"]), None).is_ok());
        assert!(check_seeds(&[], None).is_ok());
        let e = check_seeds(&seeds(&["https://a:2379"]), None).unwrap_err().to_string();
        assert!(e.contains("give --cacert"), "{e}");
        let e = check_seeds(&seeds(&["http://a:2379"]), Some(&tls())).unwrap_err().to_string();
        assert!(e.contains("are for https:// seeds"), "{e}");
        let e = check_seeds(&seeds(&["https://a:2379", "http://b:2379"]), Some(&tls())).unwrap_err().to_string();
        assert!(e.contains("mixes"), "{e}");
    }

    /// `dir/name` holding one PEM block `label` around `body`.
    fn pem_file(dir: &Path, name: &str, label: &str, body: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, format!("-----BEGIN {label}-----\n{body}\n-----END {label}-----\n")).unwrap();
        path
    }

    #[test]
    fn files_are_checked_for_what_their_flag_promises_and_keys_are_never_shown() {
        let dir = tempfile::tempdir().unwrap();
        let ca = pem_file(dir.path(), "ca.crt", "CERTIFICATE", "MIIB");
        let key = pem_file(dir.path(), "h1.key", "PRIVATE KEY", "SECRETBYTES");
        let good = Tls { ca: ca.clone(), identity: Some((ca.clone(), key.clone())) };
        assert!(good.read().is_ok());
        // A key given as the certificate, and the reverse.
        let swapped = Tls { ca: ca.clone(), identity: Some((key.clone(), ca.clone())) };
        let e = swapped.read().err().unwrap().to_string();
        assert_eq!(e, format!("--cert {}: not a PEM certificate", key.display()));
        assert!(!e.contains("SECRETBYTES"));
        let missing = Tls { ca: dir.path().join("nope.crt"), identity: None };
        assert_eq!(
            missing.read().err().unwrap().to_string(),
            format!("--cacert {}: cannot read it: no such file", dir.path().join("nope.crt").display())
        );
    }

    #[test]
    fn handshake_failures_are_told_apart() {
        // What rustls says of etcd's certificate.
        let peer = |why: &str| TlsProblem::of(&format!("transport error: invalid peer certificate: {why}"));
        assert_eq!(peer("UnknownIssuer"), Some(TlsProblem::UnknownIssuer));
        assert_eq!(peer("NotValidForName"), Some(TlsProblem::WrongName));
        assert_eq!(peer("Expired"), Some(TlsProblem::Expired));
        // What etcd (Go) answers about ours, and a member that does not speak TLS.
        let alert = |name: &str| TlsProblem::of(&format!("received fatal alert: {name}"));
        assert_eq!(alert("BadCertificate"), Some(TlsProblem::CertificateRefused));
        assert_eq!(alert("CertificateRequired"), Some(TlsProblem::CertificateRequired));
        let eof = "code: 'The service is currently unavailable', message: \"tls handshake eof\"";
        assert_eq!(TlsProblem::of(eof), Some(TlsProblem::NotTls));
        assert_eq!(TlsProblem::of("received corrupt message of type InvalidContentType"), Some(TlsProblem::NotTls));
        assert_eq!(TlsProblem::of("connection refused"), None);
        // Go's etcd checks its revocation list after the handshake, and closes.
        let closed = TlsProblem::of("transport error: hyper::Error(Io, \"stream closed because of a broken pipe\")");
        assert_eq!(closed, Some(TlsProblem::ClosedAfterHandshake));
        assert!(closed.unwrap().needs_identity() && !TlsProblem::NotTls.needs_identity());
        let line = TlsProblem::UnknownIssuer.describe(Some(&tls()), &seeds(&["https://127.0.0.1:2379"]));
        assert_eq!(
            line,
            "TLS: etcd's certificate at https://127.0.0.1:2379 is not signed by the CA in --cacert /etc/tend/ca.crt"
        );
        let line = TlsProblem::CertificateRefused.describe(Some(&tls()), &seeds(&["https://e:2379"]));
        assert!(line.contains("--cert /etc/tend/h1.crt") && !line.contains("h1.key"), "{line}");
        let anonymous = Tls { identity: None, ..tls() };
        let line = TlsProblem::CertificateRefused.describe(Some(&anonymous), &seeds(&["https://e:2379"]));
        assert_eq!(line, "TLS: etcd at https://e:2379 requires a client certificate: give --cert and --key");
    }
}
