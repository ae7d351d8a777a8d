//! Images in a request, for both wire formats: what a provider without
//! vision says instead of the image, so the model knows one was there.

use pincer_core::message::Message;

/// The note a model without vision gets in place of `m`'s images.
pub(crate) fn omitted_note(provider: &str, m: &Message) -> Option<String> {
    (!m.images.is_empty()).then(|| {
        format!(
            "[{} image(s) not shown: provider `{provider}` is not configured for images (vision = true)]",
            m.images.len()
        )
    })
}

/// `m`'s text with the note appended when its images are left out.
pub(crate) fn text_without_images(provider: &str, m: &Message) -> String {
    match omitted_note(provider, m) {
        Some(note) if m.content.is_empty() => note,
        Some(note) => format!("{}\n\n{note}", m.content),
        None => m.content.clone(),
    }
}
