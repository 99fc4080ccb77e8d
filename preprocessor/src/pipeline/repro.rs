//! One sample of one contract run again (`mdbook-fkc repro`).

use super::*;
use crate::verify::ReproError;

impl BookChecker<'_> {
    /// Runs one sample of the contract whose fence opens on `line` of chapter `path` again
    /// (`mdbook-fkc repro`); `Err` when there is no such contract, it does not import cleanly,
    /// or the request does not fit it.
    pub fn reproduce(
        &mut self,
        path: &str,
        content: &str,
        line: usize,
        request: &verify::Reproduction,
    ) -> Result<verify::Reproduced, ReproError> {
        let at = format!("{path}:{line}");
        let missing = || ReproError::NoContract { at: at.clone() };
        let read = read::chapter(path, content).ok_or_else(missing)?;
        let source = Arc::clone(&read.source);
        let work = self.begin("", read).ok_or_else(missing)?;
        let prepared = work
            .prepared
            .iter()
            .find(|p| source.line_col(p.fence.block.start).line == line)
            .ok_or_else(missing)?;
        let front_clean = !has_errors(&work.report.diagnostics);
        let (Some(raw), Some(resolved), Some(provider), true) = (
            &prepared.raw,
            &prepared.resolved,
            work.provider.as_deref(),
            prepared.gated && front_clean,
        ) else {
            return Err(ReproError::NotVerified { at });
        };
        verify::reproduce(
            raw,
            &resolved.contract,
            &resolved.import,
            provider,
            self.providers.builtin(),
            &source,
            request,
        )
    }
}
