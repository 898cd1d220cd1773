//! Rendering the roster artifact to disk.

use std::path::Path;

use acompose_engine::Database;

use crate::load::{Loader, Selection};
use crate::terminal::Terminal;

pub fn render_roster_out(
    _db: &mut Database,
    _loader: &mut Loader,
    _selection: &Selection,
    _out: &Path,
    _terminal: &Terminal,
) -> u8 {
    crate::exit::ENVIRONMENT
}
