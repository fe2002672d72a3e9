//! The basins the relay writes into, and the rule that keeps it from writing into the basin of
//! an obsolete generation.
//!
//! A reset moves a tenant's generation on and deletes the old basin; appends into it then fail
//! and the rows are dropped as obsolete. The danger is a basin coming back: an "ensure" sent
//! just before the reset can land just after it (from this process or one that stopped), and
//! the basin then accepts appends again. So, per (tenant, generation), this process:
//! - checks the tenant's generation before its first append into the basin;
//! - runs an ensure alone (no append of that basin in flight) and re-reads the generation once
//!   the basin exists;
//! - marks the basin retired when either finds the generation obsolete, and never appends into
//!   a retired basin; an append holds the basin shared for its whole duration.
//!
//! An append in flight during a reset lands in a deleted basin and fails. What remains open is
//! an ensure of a process that crashed mid-request landing after the reset *and* after another
//! process checked the generation: the basin then exists again, empty, until it is deleted.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};

use tokio::sync::{RwLock, RwLockReadGuard};

use crate::names::BasinName;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Standing {
    /// Not checked against the record yet in this process.
    Unchecked,
    Current,
    /// The generation is obsolete: never append here again.
    Retired,
}

pub(crate) struct Basin {
    pub name: BasinName,
    standing: RwLock<Standing>,
}

/// An append may proceed while this is held.
pub(crate) type AppendPermit<'a> = RwLockReadGuard<'a, Standing>;

impl Basin {
    /// Permission to append; `None` once the basin is retired. The first call checks the
    /// generation with `current` (`None`: the record could not say; the append goes ahead and
    /// the next one asks again).
    pub async fn permit(&self, current: impl Future<Output = Option<bool>>) -> Option<AppendPermit<'_>> {
        {
            let standing = self.standing.read().await;
            match *standing {
                Standing::Current => return Some(standing),
                Standing::Retired => return None,
                Standing::Unchecked => {}
            }
        }
        let mut standing = self.standing.write().await;
        if *standing == Standing::Unchecked {
            match current.await {
                Some(true) => *standing = Standing::Current,
                Some(false) => *standing = Standing::Retired,
                None => {}
            }
        }
        let standing = standing.downgrade();
        (*standing != Standing::Retired).then_some(standing)
    }

    /// Runs `ensure` (create the basin, then re-read the generation: true while current) with no
    /// append in flight; retires the basin when the generation is no longer current. Returns
    /// whether the basin may still be written.
    pub async fn ensure<E>(&self, ensure: impl Future<Output = Result<bool, E>>) -> Result<bool, E> {
        let mut standing = self.standing.write().await;
        if *standing == Standing::Retired {
            return Ok(false);
        }
        let current = ensure.await?;
        *standing = if current { Standing::Current } else { Standing::Retired };
        Ok(current)
    }
}

type TenantGeneration = (Arc<str>, u64);

/// One [`Basin`] per (tenant, generation) the relay has touched.
#[derive(Default)]
pub(crate) struct Basins {
    known: Mutex<HashMap<TenantGeneration, Arc<Basin>>>,
}

impl Basins {
    pub fn get(&self, tenant_id: &Arc<str>, generation: u64) -> Arc<Basin> {
        let mut known = twoplane_runtime::lock(&self.known);
        known
            .entry((tenant_id.clone(), generation))
            .or_insert_with(|| {
                Arc::new(Basin {
                    name: BasinName::for_tenant(tenant_id, generation),
                    standing: RwLock::new(Standing::Unchecked),
                })
            })
            .clone()
    }
}
