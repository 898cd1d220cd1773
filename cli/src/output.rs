//! `CommandOutput`: what a command prints, in the order it prints it, and the exit code
//! it ends with. The commands the fixture corpus covers (`roster validate`, `catalog
//! check`, `compose`) build one and print it at the end, so the integration tests can run
//! them in-process and compare exactly what the binary prints. Prints nothing until asked.

use crate::{print_stderr, print_stdout};

/// The stream a piece of output goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stream {
    Stdout,
    Stderr,
}

/// Everything one command prints and its exit code. The pieces keep their order across
/// both streams, so a terminal that shows both sees them interleaved as before.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CommandOutput {
    code: u8,
    pieces: Vec<(Stream, String)>,
    /// The bundle folder the command composed or found, when it did.
    bundle: Option<std::path::PathBuf>,
}

impl CommandOutput {
    /// Records the bundle folder the command composed or found.
    pub fn composed(&mut self, bundle: std::path::PathBuf) {
        self.bundle = Some(bundle);
    }

    /// The bundle folder the command composed or found.
    pub fn bundle(&self) -> Option<&std::path::Path> {
        self.bundle.as_deref()
    }

    /// Prints everything to stderr (stdout is left to a command run after), and returns
    /// the exit code.
    pub fn print_to_stderr(&self) -> u8 {
        for (_, text) in &self.pieces {
            print_stderr(text);
        }
        self.code
    }

    /// Adds text for stdout.
    pub fn stdout(&mut self, text: impl Into<String>) {
        self.push(Stream::Stdout, text.into());
    }

    /// Adds text for stderr.
    pub fn stderr(&mut self, text: impl Into<String>) {
        self.push(Stream::Stderr, text.into());
    }

    fn push(&mut self, stream: Stream, text: String) {
        if !text.is_empty() {
            self.pieces.push((stream, text));
        }
    }

    /// The output ending with `code`.
    pub fn exit(mut self, code: u8) -> Self {
        self.code = code;
        self
    }

    /// The exit code the command ends with.
    pub fn code(&self) -> u8 {
        self.code
    }

    /// Everything written to stdout.
    pub fn stdout_text(&self) -> String {
        self.text_of(Stream::Stdout)
    }

    /// Everything written to stderr.
    pub fn stderr_text(&self) -> String {
        self.text_of(Stream::Stderr)
    }

    fn text_of(&self, stream: Stream) -> String {
        self.pieces.iter().filter(|(piece_stream, _)| *piece_stream == stream).map(|(_, text)| text.as_str()).collect()
    }

    /// Prints every piece in order and returns the exit code.
    pub fn print(&self) -> u8 {
        for (stream, text) in &self.pieces {
            match stream {
                Stream::Stdout => print_stdout(text),
                Stream::Stderr => print_stderr(text),
            }
        }
        self.code
    }
}
