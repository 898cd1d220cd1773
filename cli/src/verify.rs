//! `acompose verify BUNDLE`: the host reads the bundle directory (refusing symlinks and
//! anything but folders and regular files) and re-checks it with the engine; this module
//! prints the result.

use std::path::Path;

use acompose_driver::compose::bundle::verify_directory;

use crate::terminal::{Terminal, report_error};
use crate::{exit, named_bundle, print_stderr, print_stdout};

#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// The bundle: its directory (`<out>/<id>`), a role of the home (its current bundle)
    /// or a bundle id prefix of at least four hex digits.
    pub bundle: std::path::PathBuf,
    /// Print the result as JSON (`acompose.verify.v1`).
    #[arg(long)]
    pub json: bool,
    /// Also check the bundle's signature against this allowed-signers file (git's
    /// format): the home's signature of it, or `--signature`.
    #[arg(long, value_name = "FILE")]
    pub signers: Option<std::path::PathBuf>,
    /// The signature to check instead of the home's (an armored SSH signature).
    #[arg(long, value_name = "FILE", requires = "signers")]
    pub signature: Option<std::path::PathBuf>,
}

pub(crate) fn run(mut args: VerifyArgs, home: Option<&Path>, terminal: &Terminal) -> u8 {
    args.bundle = match named_bundle(home, &args.bundle) {
        Ok(bundle) => bundle,
        Err(error) => return report_error(&error, terminal),
    };
    if let Some(signers) = &args.signers {
        let home = acompose_driver::home::resolve_home(home).ok();
        let checked = acompose_driver::compose::signature::verify_bundle(
            &args.bundle,
            home.as_ref(),
            args.signature.as_deref(),
            signers,
        );
        return match checked {
            Ok(principals) => {
                if !terminal.quiet {
                    let principals = acompose_driver::engine::diagnostic::sanitize(&principals);
                    print_stdout(&format!("bundle verified, signed by {principals}\n"));
                }
                exit::SUCCESS
            }
            Err(error) => report_error(&error, terminal),
        };
    }
    if args.json {
        #[derive(serde::Serialize)]
        struct Document<'a> {
            format: &'static str,
            verified: bool,
            skills: usize,
            files: usize,
            problems: &'a [String],
        }
        let result = verify_directory(&args.bundle);
        let (verified, skills, files, problems) = match &result {
            Ok(verified) => (true, verified.skills, verified.files, &[][..]),
            Err(problems) => (false, 0, 0, problems.as_slice()),
        };
        let document = Document { format: "acompose.verify.v1", verified, skills, files, problems };
        print_stdout(&String::from_utf8_lossy(&acompose_driver::engine::snapshot::to_json_bytes(&document)));
        return if verified { exit::SUCCESS } else { exit::INVALID };
    }
    match verify_directory(&args.bundle) {
        Ok(verified) => {
            if !terminal.quiet {
                print_stdout(&format!("bundle verified: {} skills // {} files\n", verified.skills, verified.files));
            }
            exit::SUCCESS
        }
        Err(problems) => {
            const SHOWN: usize = 20;
            for problem in problems.iter().take(SHOWN) {
                print_stderr(&format!("error: {problem}\n"));
            }
            if problems.len() > SHOWN {
                print_stderr(&format!("error: … and {} more problems\n", problems.len() - SHOWN));
            }
            print_stderr(&format!("error: bundle `{}` failed verification\n", args.bundle.display()));
            exit::INVALID
        }
    }
}
