//! Who may read a stream.
//!
//! Guarantees: the plane asks the [`Authorizer`] before it looks anything up, and the question
//! carries nothing the caller did not send (the user, the stream id, the offset), so neither
//! the answer nor its timing can depend on whether the stream exists here. A denial is always
//! the same [`crate::PlaneErrorKind::Forbidden`] error.
//!
//! The plane is not generic over the user type: the user travels as `&dyn Any` and an
//! authorizer downcasts it ([`AuthRequest::user`]). A user of an unexpected type downcasts to
//! `None`, which every helper here treats as a denial.

use std::any::Any;
use std::sync::Arc;

use async_trait::async_trait;

/// One subscription request, as the authorizer sees it.
pub struct AuthRequest<'a> {
    /// The caller's user, type-erased; see [`AuthRequest::user`].
    pub user_any: &'a (dyn Any + Send + Sync),
    pub stream_id: &'a str,
    /// Where the subscriber claims to be.
    pub from: u64,
}

impl AuthRequest<'_> {
    /// The user as `T`, or `None` when the caller passed another type.
    pub fn user<T: Any>(&self) -> Option<&T> {
        self.user_any.downcast_ref::<T>()
    }
}

/// Decides whether a user may subscribe. There is no default-allow: a plane without an
/// authorizer is refused at construction; [`AllowAll`] is the explicit opt-out.
#[async_trait]
pub trait Authorizer: Send + Sync {
    async fn authorize(&self, request: AuthRequest<'_>) -> bool;
}

/// Allows every subscription (demos and tests; say so out loud by naming it).
#[derive(Clone, Copy, Debug, Default)]
pub struct AllowAll;

#[async_trait]
impl Authorizer for AllowAll {
    async fn authorize(&self, _request: AuthRequest<'_>) -> bool {
        true
    }
}

/// A synchronous closure over a typed user, as an [`Authorizer`]. A user of another type is
/// denied.
pub fn authorize_with<U, F>(f: F) -> Arc<dyn Authorizer>
where
    U: Any,
    F: Fn(&U, &str, u64) -> bool + Send + Sync + 'static,
{
    struct ClosureAuth<U, F> {
        f: F,
        _user: std::marker::PhantomData<fn(&U)>,
    }

    #[async_trait]
    impl<U: Any, F> Authorizer for ClosureAuth<U, F>
    where
        F: Fn(&U, &str, u64) -> bool + Send + Sync + 'static,
    {
        async fn authorize(&self, request: AuthRequest<'_>) -> bool {
            match request.user::<U>() {
                Some(user) => (self.f)(user, request.stream_id, request.from),
                None => false,
            }
        }
    }

    Arc::new(ClosureAuth { f, _user: std::marker::PhantomData })
}
