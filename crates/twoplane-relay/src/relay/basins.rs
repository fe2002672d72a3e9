//! The basins the relay writes into, and the rule that keeps it from writing into the basin of
//! an obsolete generation.
//!
//! A reset moves a tenant's generation on and deletes the old basin; appends into it then fail
//! and the rows are dropped as obsolete. The danger is the relay itself re-creating that basin:
//! an "ensure" sent just before the reset can land just after it. So, per (tenant, generation):
//! - an ensure runs alone (no append of that basin is in flight) and re-reads the tenant's
//!   generation once the basin exists; if it moved on, the basin is marked retired;
//! - an append holds the basin shared for its whole duration, and is not sent once the basin
//!   is retired.
//!
//! An append that was in flight during a reset lands in a deleted basin and fails. So no append
//! of the relay lands in a basin after the reset of its generation, as long as the reset moves
//! the generation no later than it deletes the basin.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::{RwLock, RwLockReadGuard};

use crate::names::BasinName;

pub(crate) struct Basin {
    pub name: BasinName,
    retired: RwLock<bool>,
}

/// An append may proceed while this is held.
pub(crate) type AppendPermit<'a> = RwLockReadGuard<'a, bool>;

impl Basin {
    /// Permission to append; `None` once the basin is retired.
    pub async fn permit(&self) -> Option<AppendPermit<'_>> {
        let retired = self.retired.read().await;
        (!*retired).then_some(retired)
    }

    /// Runs `ensure` (create the basin, then re-read the generation: true while current) with no
    /// append in flight; retires the basin when the generation is no longer current. Returns
    /// whether the basin may still be written.
    pub async fn ensure<E>(&self, ensure: impl std::future::Future<Output = Result<bool, E>>) -> Result<bool, E> {
        let mut retired = self.retired.write().await;
        if *retired {
            return Ok(false);
        }
        let current = ensure.await?;
        if !current {
            *retired = true;
        }
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
        let mut known = self.known.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        known
            .entry((tenant_id.clone(), generation))
            .or_insert_with(|| {
                Arc::new(Basin { name: BasinName::for_tenant(tenant_id, generation), retired: RwLock::new(false) })
            })
            .clone()
    }
}
