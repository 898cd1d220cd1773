//! `acompose bundle push BUNDLE REF` and `acompose bundle pull REF`: the host moves a
//! bundle to or from an OCI registry (`docs/distribution.md`); this module prints what
//! crossed the wire.

use std::path::Path;

use acompose_driver::compose::registry::client::Access;
use acompose_driver::compose::registry::{PullRequest, Pulled, Pushed, Transfer, pull, push_signed};
use acompose_driver::convergence::bundle_name::resolve as resolve_bundle;
use acompose_driver::engine::diagnostic::sanitize;
use acompose_driver::home::resolve_home;

use crate::terminal::{Terminal, report_error};
use crate::{exit, print_stdout};

#[derive(Debug, clap::Args)]
pub struct PushArgs {
    /// The bundle: its folder, a role of the home (its current bundle) or a bundle id in
    /// the home's bundles.
    pub bundle: String,
    /// Where it goes: `registry/repository:tag` (or `…@sha256:…`).
    #[arg(value_name = "REF")]
    pub reference: String,
    /// Speak plain HTTP to a registry that is not on a loopback address.
    #[arg(long)]
    pub plain_http: bool,
    /// How long the whole transfer may take, in seconds (each read also has its own
    /// timeout).
    #[arg(long, value_name = "SECONDS", default_value_t = 300, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub deadline: u64,
    /// Sign the bundle with this OpenSSH private key and push the signature beside it.
    #[arg(long, value_name = "KEY")]
    pub sign: Option<std::path::PathBuf>,
    /// Print a JSON report instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Args)]
pub struct SignArgs {
    /// The bundle: its folder, a role of the home (its current bundle) or a bundle id in
    /// the home's bundles.
    pub bundle: String,
    /// The OpenSSH private key to sign with (Ed25519, unencrypted).
    #[arg(long, value_name = "KEY")]
    pub key: std::path::PathBuf,
}

#[derive(Debug, clap::Args)]
pub struct PullArgs {
    /// The artifact: `registry/repository:tag` or `registry/repository@sha256:…`.
    #[arg(value_name = "REF")]
    pub reference: String,
    /// Speak plain HTTP to a registry that is not on a loopback address.
    #[arg(long)]
    pub plain_http: bool,
    /// How long the whole transfer may take, in seconds (each read also has its own
    /// timeout).
    #[arg(long, value_name = "SECONDS", default_value_t = 300, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub deadline: u64,
    /// Print a JSON report instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(serde::Serialize)]
struct TransferReport {
    blobs_sent: u64,
    bytes_sent: u64,
    blobs_received: u64,
    bytes_received: u64,
}

impl From<Transfer> for TransferReport {
    fn from(transfer: Transfer) -> Self {
        TransferReport {
            blobs_sent: transfer.blobs_sent,
            bytes_sent: transfer.bytes_sent,
            blobs_received: transfer.blobs_received,
            bytes_received: transfer.bytes_received,
        }
    }
}

#[derive(serde::Serialize)]
struct UploadedReport<'a> {
    digest: &'a str,
    media_type: &'a str,
    subject: &'a str,
}

#[derive(serde::Serialize)]
struct PushReport<'a> {
    format: &'static str,
    bundle: &'a str,
    role: &'a str,
    reference: &'a str,
    digest: &'a str,
    blobs: usize,
    uploaded: Vec<UploadedReport<'a>>,
    transfer: TransferReport,
}

#[derive(serde::Serialize)]
struct PullReport<'a> {
    format: &'static str,
    bundle: &'a str,
    role: &'a str,
    reference: &'a str,
    digest: &'a str,
    status: &'static str,
    path: String,
    entries_reused: usize,
    transfer: TransferReport,
}

fn json(report: &impl serde::Serialize) -> String {
    String::from_utf8_lossy(&acompose_driver::engine::snapshot::to_json_bytes(report)).into_owned()
}

/// `acompose bundle sign BUNDLE --key KEY`: signs and keeps the signature in the home.
pub(crate) fn run_sign(args: &SignArgs, home: Option<&Path>, terminal: &Terminal) -> u8 {
    let home = match resolve_home(home) {
        Ok(home) => home,
        Err(error) => return report_error(&error, terminal),
    };
    let signed = resolve_bundle(Some(&home), std::path::Path::new(&args.bundle))
        .and_then(|bundle| acompose_driver::compose::signature::sign(&bundle, &args.key))
        .and_then(|(armored, id)| {
            acompose_driver::compose::signature::keep(&home, &id, &armored).map(|path| (id, path))
        });
    match signed {
        Ok((id, path)) => {
            if !terminal.quiet {
                print_stdout(&format!(
                    "bundle {id} signed
signature {}
",
                    path.display()
                ));
            }
            exit::SUCCESS
        }
        Err(error) => report_error(&error, terminal),
    }
}

fn push_text(pushed: &Pushed, reference: &str) -> String {
    let mut text = push_summary(pushed, reference);
    if let Some(signature) = &pushed.signature {
        text.push_str(&format!("signed {signature}\n"));
    }
    text
}

fn push_summary(pushed: &Pushed, reference: &str) -> String {
    format!(
        "bundle {} (role {})\npushed {}\ndigest {}\nblobs  {} of {} uploaded ({} bytes), the rest already there\n",
        pushed.id,
        sanitize(&pushed.role),
        sanitize(reference),
        pushed.digest,
        pushed.uploaded.len(),
        pushed.blobs,
        pushed.transfer.bytes_sent,
    )
}

fn pull_text(pulled: &Pulled, reference: &str) -> String {
    let mut text = pull_summary(pulled, reference);
    match (&pulled.signer, pulled.signed) {
        (Some(signer), _) => text.push_str(&format!("signed by {} (an allowed signer)\n", sanitize(signer))),
        (None, true) => text.push_str("signed (no `bundle_signers` policy checked it)\n"),
        (None, false) => {}
    }
    text
}

fn pull_summary(pulled: &Pulled, reference: &str) -> String {
    format!(
        "bundle {} ({}, role {})\npulled {}\ndigest {}\npath   {}\nblobs  {} downloaded ({} bytes), {} store entries already in the home\n",
        pulled.id,
        pulled.outcome.name(),
        sanitize(&pulled.role),
        sanitize(reference),
        pulled.digest,
        pulled.path.display(),
        pulled.transfer.blobs_received,
        pulled.transfer.bytes_received,
        pulled.entries_reused,
    )
}

pub(crate) fn run_push(args: PushArgs, home: Option<&Path>, terminal: &Terminal) -> u8 {
    let home = resolve_home(home).ok();
    let access = Access { plain_http: args.plain_http, deadline: std::time::Duration::from_secs(args.deadline) };
    let pushed = resolve_bundle(home.as_ref(), std::path::Path::new(&args.bundle))
        .and_then(|bundle| push_signed(&bundle, &args.reference, access, args.sign.as_deref()));
    match pushed {
        Ok(pushed) if args.json => {
            let report = PushReport {
                format: "acompose.bundle-push.v1",
                bundle: &pushed.id,
                role: &pushed.role,
                reference: &args.reference,
                digest: &pushed.digest,
                blobs: pushed.blobs,
                uploaded: pushed
                    .uploaded
                    .iter()
                    .map(|blob| UploadedReport {
                        digest: &blob.digest,
                        media_type: blob.media_type,
                        subject: &blob.subject,
                    })
                    .collect(),
                transfer: pushed.transfer.into(),
            };
            print_stdout(&json(&report));
            exit::SUCCESS
        }
        Ok(pushed) => {
            // The digest is what the command is for: it is printed even when quiet.
            let text =
                if terminal.quiet { format!("{}\n", pushed.digest) } else { push_text(&pushed, &args.reference) };
            print_stdout(&text);
            exit::SUCCESS
        }
        Err(error) => report_error(&error, terminal),
    }
}

pub(crate) fn run_pull(args: PullArgs, home: Option<&Path>, terminal: &Terminal) -> u8 {
    let home = match resolve_home(home) {
        Ok(home) => home,
        Err(error) => return report_error(&error, terminal),
    };
    let access = Access { plain_http: args.plain_http, deadline: std::time::Duration::from_secs(args.deadline) };
    let request = PullRequest { reference: &args.reference, home: &home, access };
    match pull(&request) {
        Ok(pulled) if args.json => {
            let report = PullReport {
                format: "acompose.bundle-pull.v1",
                bundle: &pulled.id,
                role: &pulled.role,
                reference: &args.reference,
                digest: &pulled.digest,
                status: pulled.outcome.name(),
                path: pulled.path.display().to_string(),
                entries_reused: pulled.entries_reused,
                transfer: pulled.transfer.into(),
            };
            print_stdout(&json(&report));
            exit::SUCCESS
        }
        Ok(pulled) => {
            let text = if terminal.quiet { format!("{}\n", pulled.id) } else { pull_text(&pulled, &args.reference) };
            print_stdout(&text);
            exit::SUCCESS
        }
        Err(error) => report_error(&error, terminal),
    }
}
