//! SCRAM-SHA-256 (password SASLprepped, RFC 4013) and SCRAM-SHA-1 (RFC 5802 as MongoDB uses it).
//! Recorded SASL conversations are bound to their session's nonce and cannot be replayed, so each
//! replay connection authenticates itself.

use super::connection::{Conn, ConnError};
use super::target::{Auth, Mechanism as Requested};
use crate::wire::reply;
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use bson::{rawdoc, spec::BinarySubtype, Binary, RawDocumentBuf};
use hmac::{Hmac, Mac};
use rand::RngCore;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mechanism {
    Sha1,
    Sha256,
}

impl Mechanism {
    pub fn name(self) -> &'static str {
        match self {
            Mechanism::Sha1 => "SCRAM-SHA-1",
            Mechanism::Sha256 => "SCRAM-SHA-256",
        }
    }

    fn hmac(self, key: &[u8], data: &[u8]) -> Vec<u8> {
        match self {
            Mechanism::Sha1 => {
                let mut m = Hmac::<sha1::Sha1>::new_from_slice(key).expect("any key length");
                m.update(data);
                m.finalize().into_bytes().to_vec()
            }
            Mechanism::Sha256 => {
                let mut m = Hmac::<sha2::Sha256>::new_from_slice(key).expect("any key length");
                m.update(data);
                m.finalize().into_bytes().to_vec()
            }
        }
    }

    fn hash(self, data: &[u8]) -> Vec<u8> {
        use sha2::Digest;
        match self {
            Mechanism::Sha1 => sha1::Sha1::digest(data).to_vec(),
            Mechanism::Sha256 => sha2::Sha256::digest(data).to_vec(),
        }
    }

    fn salted_password(self, password: &[u8], salt: &[u8], iterations: u32) -> Vec<u8> {
        match self {
            Mechanism::Sha1 => {
                let mut out = [0u8; 20];
                pbkdf2::pbkdf2_hmac::<sha1::Sha1>(password, salt, iterations, &mut out);
                out.to_vec()
            }
            Mechanism::Sha256 => {
                let mut out = [0u8; 32];
                pbkdf2::pbkdf2_hmac::<sha2::Sha256>(password, salt, iterations, &mut out);
                out.to_vec()
            }
        }
    }
}

/// The mechanism to use: the URI's, else SHA-256 unless the server lists only SHA-1 for the user.
fn choose(auth: &Auth, hello: &RawDocumentBuf) -> Mechanism {
    match auth.mechanism {
        Requested::ScramSha1 => return Mechanism::Sha1,
        Requested::ScramSha256 | Requested::X509 => return Mechanism::Sha256,
        Requested::ScramNegotiated => {}
    }
    let listed: Vec<String> = hello
        .get_array("saslSupportedMechs")
        .map(|a| {
            a.into_iter()
                .flatten()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    if listed.iter().any(|m| m == "SCRAM-SHA-1") && !listed.iter().any(|m| m == "SCRAM-SHA-256") {
        Mechanism::Sha1
    } else {
        Mechanism::Sha256
    }
}

fn attr(message: &str, name: char) -> Option<&str> {
    message
        .split(',')
        .find_map(|kv| kv.strip_prefix(name).and_then(|r| r.strip_prefix('=')))
}

fn payload(reply: &RawDocumentBuf) -> Option<String> {
    let b = reply.get_binary("payload").ok()?;
    String::from_utf8(b.bytes.to_vec()).ok()
}

/// The password as the mechanism hashes it: SCRAM-SHA-1 in MongoDB hashes it the way MONGODB-CR
/// did (no SASLprep); SCRAM-SHA-256 SASLpreps it (a password with characters SASLprep prohibits
/// is an error, as in the drivers).
fn mongo_password(mech: Mechanism, user: &str, password: &str) -> Result<String, String> {
    match mech {
        Mechanism::Sha1 => {
            use md5::Digest;
            let digest = md5::Md5::digest(format!("{user}:mongo:{password}").as_bytes());
            Ok(digest.iter().map(|b| format!("{b:02x}")).collect())
        }
        Mechanism::Sha256 => stringprep::saslprep(password)
            .map(|p| p.into_owned())
            .map_err(|e| format!("the password is not valid for SCRAM-SHA-256 (SASLprep: {e})")),
    }
}

/// The client-final message, and the signature the server's final message must carry.
struct Proof {
    client_final: String,
    server_signature: String,
}

/// Answers the server-first message (RFC 5802 section 3); the error says what the server got wrong.
fn prove(
    mech: Mechanism,
    password: &str,
    nonce: &str,
    first_bare: &str,
    server_first: &str,
) -> Result<Proof, String> {
    let server_nonce = attr(server_first, 'r').unwrap_or_default();
    let salt = attr(server_first, 's')
        .and_then(|s| B64.decode(s).ok())
        .ok_or("server-first message has no salt")?;
    let iterations: u32 = attr(server_first, 'i')
        .and_then(|i| i.parse().ok())
        .filter(|&i| i >= 1)
        .ok_or("server-first message has no iteration count")?;
    if !server_nonce.starts_with(nonce) {
        return Err("the server nonce does not extend ours".into());
    }
    let salted = mech.salted_password(password.as_bytes(), &salt, iterations);
    let client_key = mech.hmac(&salted, b"Client Key");
    let stored_key = mech.hash(&client_key);
    let without_proof = format!("c=biws,r={server_nonce}");
    let auth_message = format!("{first_bare},{server_first},{without_proof}");
    let signature = mech.hmac(&stored_key, auth_message.as_bytes());
    let proof: Vec<u8> = client_key
        .iter()
        .zip(&signature)
        .map(|(a, b)| a ^ b)
        .collect();
    let server_key = mech.hmac(&salted, b"Server Key");
    Ok(Proof {
        client_final: format!("{without_proof},p={}", B64.encode(proof)),
        server_signature: B64.encode(mech.hmac(&server_key, auth_message.as_bytes())),
    })
}

fn binary(s: String) -> Binary {
    Binary {
        subtype: BinarySubtype::Generic,
        bytes: s.into_bytes(),
    }
}

/// One SASL conversation on one connection.
struct Conversation<'a> {
    conn: &'a mut Conn,
    source: &'a str,
    user: String,
    mech: Mechanism,
    id: Option<bson::RawBson>,
}

impl Conversation<'_> {
    fn fail(&self, detail: String) -> ConnError {
        ConnError::Auth {
            addr: self.conn.addr().to_owned(),
            user: self.user.clone(),
            detail,
        }
    }

    /// Runs one SASL command; a failed reply is an error prefixed with `what`.
    async fn run(
        &mut self,
        mut cmd: RawDocumentBuf,
        what: &str,
    ) -> Result<RawDocumentBuf, ConnError> {
        if let Some(id) = &self.id {
            cmd.append(bson::cstr!("conversationId"), id.clone());
        }
        let reply = self.conn.command(&cmd, "authenticating").await?;
        if let Err(e) = reply::check_command(reply.as_bytes()) {
            return Err(self.fail(format!("{what}{e}")));
        }
        Ok(reply)
    }

    /// `saslStart` with the client-first message; returns the server-first message.
    async fn start(&mut self, first_bare: &str) -> Result<String, ConnError> {
        let start = rawdoc! {
            "saslStart": 1, "mechanism": self.mech.name(), "payload": binary(format!("n,,{first_bare}")),
            "autoAuthorize": 1, "options": { "skipEmptyExchange": true }, "$db": self.source,
        };
        let what = format!("{} saslStart: ", self.mech.name());
        let reply = self.run(start, &what).await?;
        self.id = Some(
            reply
                .get("conversationId")
                .ok()
                .flatten()
                .map(bson::RawBson::from)
                .ok_or_else(|| self.fail("saslStart reply has no conversationId".into()))?,
        );
        payload(&reply).ok_or_else(|| self.fail("saslStart reply has no payload".into()))
    }

    /// `saslContinue` with `payload`.
    async fn next(&mut self, payload: String, what: &str) -> Result<RawDocumentBuf, ConnError> {
        let db = self.source;
        let step = rawdoc! { "saslContinue": 1, "payload": binary(payload), "$db": db };
        self.run(step, what).await
    }
}

pub async fn authenticate(
    conn: &mut Conn,
    auth: &Auth,
    hello: &RawDocumentBuf,
) -> Result<(), ConnError> {
    let mech = choose(auth, hello);
    let user = auth.user.clone().unwrap_or_default();
    let password = mongo_password(mech, &user, auth.password.as_deref().unwrap_or_default())
        .map_err(|detail| ConnError::Auth {
            addr: conn.addr().to_owned(),
            user: user.clone(),
            detail,
        })?;
    let mut nonce = [0u8; 24];
    rand::rng().fill_bytes(&mut nonce);
    let nonce = B64.encode(nonce);
    let sasl_user = user.replace('=', "=3D").replace(',', "=2C");
    let first_bare = format!("n={sasl_user},r={nonce}");
    let mut c = Conversation {
        conn,
        source: &auth.source,
        user,
        mech,
        id: None,
    };
    let server_first = c.start(&first_bare).await?;
    let proof =
        prove(mech, &password, &nonce, &first_bare, &server_first).map_err(|d| c.fail(d))?;
    let what = format!("{} saslContinue: ", mech.name());
    let reply = c.next(proof.client_final, &what).await?;
    let server_final = payload(&reply).unwrap_or_default();
    if attr(&server_final, 'v') != Some(proof.server_signature.as_str()) {
        return Err(c.fail("the server's signature does not verify".into()));
    }
    let mut done = reply.get_bool("done").unwrap_or(true);
    let mut rounds = 0;
    while !done && rounds < 3 {
        done = c
            .next(String::new(), "")
            .await?
            .get_bool("done")
            .unwrap_or(true);
        rounds += 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc7677_test_vector() {
        // RFC 7677 section 3: user "user", password "pencil".
        let m = Mechanism::Sha256;
        let salt = B64.decode("W22ZaJ0SNY7soEsUEjb6gQ==").unwrap();
        let salted = m.salted_password(b"pencil", &salt, 4096);
        let client_key = m.hmac(&salted, b"Client Key");
        let stored = m.hash(&client_key);
        let auth = "n=user,r=rOprNGfwEbeRWgbNEkqO,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096,c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0";
        let sig = m.hmac(&stored, auth.as_bytes());
        let proof: Vec<u8> = client_key.iter().zip(&sig).map(|(a, b)| a ^ b).collect();
        assert_eq!(
            B64.encode(proof),
            "dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
        );
    }

    #[test]
    fn sha256_passwords_are_saslprepped_sha1_are_not() {
        // RFC 4013 section 3: soft hyphen is mapped to nothing, NBSP to a space, a control fails.
        assert_eq!(
            mongo_password(Mechanism::Sha256, "u", "I\u{AD}X").unwrap(),
            "IX"
        );
        assert_eq!(
            mongo_password(Mechanism::Sha256, "u", "a\u{A0}b").unwrap(),
            "a b"
        );
        assert_eq!(
            mongo_password(Mechanism::Sha256, "u", "pässwörd").unwrap(),
            "pässwörd"
        );
        assert!(mongo_password(Mechanism::Sha256, "u", "a\u{7}").is_err());
        assert_eq!(
            mongo_password(Mechanism::Sha1, "u", "I\u{AD}X")
                .unwrap()
                .len(),
            32
        );
    }
}
