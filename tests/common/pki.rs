//! A test PKI made with rcgen: a CA, a server certificate for localhost / 127.0.0.1, client
//! certificates, and secantusd-rs started with its TLS flags.

use super::server::Server;
use super::tempdir;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
use std::path::PathBuf;

/// PEM files in a temporary directory: `ca.pem`, `server.pem` + `server-key.pem`, and
/// `client.pem` (certificate and key in one file, subject `CN=mongotape replayer`).
pub struct Pki {
    dir: tempfile::TempDir,
    ca: Issuer<'static, KeyPair>,
}

/// The subject of `client.pem` as the server names its `$external` user.
pub const CLIENT_SUBJECT: &str = "CN=mongotape replayer";

impl Pki {
    pub fn new() -> Pki {
        let dir = tempdir();
        let (ca_pem, ca) = make_ca("mongotape test CA");
        let pki = Pki { dir, ca };
        pki.write("ca.pem", &ca_pem);
        let (cert, key) = pki.leaf("localhost", &["localhost", "127.0.0.1"]);
        pki.write("server.pem", &cert);
        pki.write("server-key.pem", &key);
        pki.client("client.pem", "mongotape replayer");
        pki
    }

    /// A client certificate with `CN=common_name`, certificate and key in one PEM file `name`.
    pub fn client(&self, name: &str, common_name: &str) -> PathBuf {
        let (cert, key) = self.leaf(common_name, &[]);
        self.write(name, &format!("{cert}{key}"));
        self.path(name)
    }

    fn leaf(&self, name: &str, sans: &[&str]) -> (String, String) {
        let key = KeyPair::generate().unwrap();
        let sans: Vec<String> = sans.iter().map(|s| s.to_string()).collect();
        let mut params = CertificateParams::new(sans).unwrap();
        params.distinguished_name = rcgen::DistinguishedName::new();
        params.distinguished_name.push(DnType::CommonName, name);
        let cert = params.signed_by(&key, &self.ca).unwrap();
        (cert.pem(), key.serialize_pem())
    }

    fn write(&self, name: &str, text: &str) {
        std::fs::write(self.path(name), text).unwrap();
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn arg(&self, name: &str) -> String {
        self.path(name).to_str().unwrap().to_owned()
    }

    /// secantusd-rs serving TLS with this PKI's server certificate, trusting its CA for client
    /// certificates, plus `extra` flags (`--auth`, `--tls-require-client-cert`).
    pub fn server(&self, extra: &[&str]) -> Server {
        let mut args = vec![
            "--tls-cert-file".to_owned(),
            self.arg("server.pem"),
            "--tls-key-file".to_owned(),
            self.arg("server-key.pem"),
            "--tls-ca-file".to_owned(),
            self.arg("ca.pem"),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        Server::start_with(&args)
    }
}

fn make_ca(name: &str) -> (String, Issuer<'static, KeyPair>) {
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    let cert = params.self_signed(&key).unwrap();
    (cert.pem(), Issuer::new(params, key))
}
