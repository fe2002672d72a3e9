//! One table for an enum whose variants are stable numeric codes with names: the frame kinds, the
//! message kinds and the JavaScript types a binding passes as numbers.
//!
//! A variant's code is its place in the table (from 0), `ALL` lists the variants in that order
//! (so a code is an index into it), and each variant's name stands beside it. Declaring the
//! enum, the list and the names from the one table is what keeps the three from disagreeing, and
//! lets every such enum be declared the same way.

/// Declares `enum $ty` with `#[repr(u8)]` codes in table order from 0, `$ty::ALL` in code order,
/// and `$ty::$name_fn`, which gives each variant's name. The enum's own attributes (derives,
/// docs) are passed through, as are the name function's docs.
macro_rules! coded_enum {
    (@unit $variant:ident) => {
        ()
    };
    (
        $(#[$meta:meta])*
        $vis:vis enum $ty:ident;
        $(#[$name_meta:meta])*
        fn $name_fn:ident;
        { $($variant:ident => $name:expr),+ $(,)? }
    ) => {
        $(#[$meta])*
        #[repr(u8)]
        $vis enum $ty {
            $($variant),+
        }

        impl $ty {
            /// Every variant, in code order.
            pub const ALL: [$ty; <[()]>::len(&[$($crate::coded::coded_enum!(@unit $variant)),+])] =
                [$($ty::$variant),+];

            $(#[$name_meta])*
            pub fn $name_fn(self) -> &'static str {
                match self {
                    $($ty::$variant => $name),+
                }
            }
        }
    };
}

pub(crate) use coded_enum;
