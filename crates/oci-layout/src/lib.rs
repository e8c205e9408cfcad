//! What every reader and writer of OCI images shares, below all of them: the [`Digest`] of a
//! blob, parsed and checked (a known algorithm, hex of its length) before it names a file, and
//! one reader of an image ([`Source::image`]) from an OCI layout folder, an oci-archive or a
//! docker-archive into its config and layer list; what a layer's whiteouts mean, in a tar
//! ([`Whiteout`]) and in a folder in overlayfs form ([`OverlayEntry`]); and the one walk over a
//! layer's entries ([`walk_layer`]) that every applier of a layer shares; and the decoders of
//! gzip and zstd that read every member and frame ([`decompress`]); and the stand-in a device
//! node is kept as where it cannot be made ([`DeviceStandIn`], rootless).

pub mod decompress;
mod device_stand_in;
mod digest;
mod layer_walk;
mod overlay;
mod reader;
mod source;
mod whiteout;

pub use device_stand_in::{DeviceKind, DeviceStandIn, DEVICE_XATTR};
pub use digest::{Algorithm, Digest, DigestError};
pub use layer_walk::{relative, walk_layer, LayerChange, WalkError, WalkOptions};
pub use overlay::{
    in_user_namespace, is_opaque, is_overlay_xattr, mount_options_suffix, opaque_xattr,
    OverlayEntry,
};
pub use reader::{Image, Layer};
pub use source::{Source, TarFile};
pub use whiteout::Whiteout;
