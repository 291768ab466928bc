//! Where a step's tools come from. A thread consults its [`ToolSources`] each time a step
//! freezes its context: the built-ins now; MCP servers, sub-agent tools and a client's own
//! tools later, each a [`ToolSource`]. A tool that appears (a source added, or a source whose
//! tools changed) is offered from the next step on, never half-way through one, because a
//! step runs its calls with the set it froze.

use std::sync::{Arc, Mutex, PoisonError, RwLock};

use futures::future::BoxFuture;
use rein_protocol::ThreadSettings;

use super::{Tool, ToolSet};

/// Something that offers tools. `tools` is asked at every step freeze, so it must be cheap:
/// return the same `Arc` while nothing changed.
pub trait ToolSource: Send + Sync + 'static {
    fn tools(&self) -> Arc<ToolSet>;

    /// Make the tool server `name` of this source run (a skill the model opened depends
    /// on it): `None` when this source has no server of that name; else the wait until
    /// it is ready, or why it cannot be.
    fn ensure_server(&self, _name: &str) -> Option<BoxFuture<'static, Result<(), String>>> {
        None
    }

    /// Every tool the source can run, also those it does not offer the model yet (MCP
    /// tools past the budget, behind `tool_search`): what the kernel itself may call (a
    /// goal's MCP verifier). By default what it offers.
    fn runnable(&self) -> Arc<ToolSet> {
        self.tools()
    }
}

/// Tools that depend on the thread they serve (e.g. MCP servers started in its working
/// directory). Asked once for each thread the manager creates or resumes; what it returns
/// is that thread's source from then on.
pub trait ThreadToolSource: Send + Sync + 'static {
    fn for_thread(&self, settings: &ThreadSettings) -> Option<Arc<dyn ToolSource>>;
}

/// A fixed set of tools (the built-ins).
pub struct StaticTools(Arc<ToolSet>);

impl StaticTools {
    pub fn new(tools: Vec<Arc<dyn Tool>>) -> Self {
        Self(Arc::new(ToolSet::new(tools)))
    }
}

impl ToolSource for StaticTools {
    fn tools(&self) -> Arc<ToolSet> {
        Arc::clone(&self.0)
    }
}

/// A source whose tools can be replaced at any time (a connection that comes and goes).
#[derive(Default)]
pub struct ToolSlot(RwLock<Arc<ToolSet>>);

impl ToolSlot {
    pub fn new() -> Self {
        Self::default()
    }

    /// Offer `tools` from the next step on.
    pub fn set(&self, tools: Vec<Arc<dyn Tool>>) {
        *self.0.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(ToolSet::new(tools));
    }
}

impl ToolSource for ToolSlot {
    fn tools(&self) -> Arc<ToolSet> {
        Arc::clone(&self.0.read().unwrap_or_else(PoisonError::into_inner))
    }
}

/// The merged set last frozen, and the source sets it was made of.
type Frozen = (Vec<Arc<ToolSet>>, Arc<ToolSet>);

/// A thread's tool sources, in order of precedence (a name offered by two sources is the
/// first one's).
#[derive(Default)]
pub struct ToolSources {
    sources: RwLock<Vec<Arc<dyn ToolSource>>>,
    last: Mutex<Option<Frozen>>,
    /// Only these tools are offered (an agent role's allow-list); `None`: all.
    allow: RwLock<Option<Vec<String>>>,
}

impl ToolSources {
    pub fn new(sources: Vec<Arc<dyn ToolSource>>) -> Self {
        Self {
            sources: RwLock::new(sources),
            last: Mutex::new(None),
            allow: RwLock::new(None),
        }
    }

    /// Offer only the tools named in `names` from the next step on.
    pub fn restrict(&self, names: Vec<String>) {
        *self.allow.write().unwrap_or_else(PoisonError::into_inner) = Some(names);
        *self.last.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }

    /// Consult `source` too, from the next step on.
    pub fn add(&self, source: Arc<dyn ToolSource>) {
        self.sources
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .push(source);
    }

    /// Make the tool server `name` run, by the first source that has one of that name;
    /// `None` when none has.
    pub fn ensure_server(&self, name: &str) -> Option<BoxFuture<'static, Result<(), String>>> {
        self.sources
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .find_map(|s| s.ensure_server(name))
    }

    /// Every tool the sources can run ([`ToolSource::runnable`]), within the allow-list;
    /// not cached (the kernel's own calls are rare).
    pub fn runnable(&self) -> Arc<ToolSet> {
        let sets: Vec<Arc<ToolSet>> = self
            .sources
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|s| s.runnable())
            .collect();
        let merged = ToolSet::merged(sets.iter().map(AsRef::as_ref));
        match self
            .allow
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
        {
            Some(allow) => Arc::new(merged.only(allow)),
            None => Arc::new(merged),
        }
    }

    /// The tools a step offers from now on. While no source changed, the same set is
    /// returned (so its specs are not rebuilt every step).
    pub fn freeze(&self) -> Arc<ToolSet> {
        let sets: Vec<Arc<ToolSet>> = self
            .sources
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|s| s.tools())
            .collect();
        let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((parts, merged)) = last.as_ref() {
            let same = parts.len() == sets.len()
                && parts.iter().zip(&sets).all(|(a, b)| Arc::ptr_eq(a, b));
            if same {
                return Arc::clone(merged);
            }
        }
        let mut merged = match sets.as_slice() {
            [only] => Arc::clone(only),
            _ => Arc::new(ToolSet::merged(sets.iter().map(AsRef::as_ref))),
        };
        if let Some(allow) = self
            .allow
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
        {
            merged = Arc::new(merged.only(allow));
        }
        *last = Some((sets, Arc::clone(&merged)));
        merged
    }
}
