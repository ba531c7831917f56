"""Models named by a small, picklable spec: what the CLI and remote workers build from."""

from __future__ import annotations

from dataclasses import dataclass

from bigloop._errors import UserError
from bigloop.atoms.models.base import ChatModel


@dataclass(frozen=True, kw_only=True)
class ModelSpec:
    """`name` is "embedded", an installable local model's short name ("coder-1.5b"), a
    .gguf path, or a server's model name with `base_url`; `adapter` a GGUF LoRA applied
    over a local model."""

    name: str = "embedded"
    base_url: str | None = None
    adapter: str | None = None

    def build(self, *, n_threads: int | None = None) -> ChatModel:
        """The model this spec names (the embedded one is loaded on first use); a local
        one decodes on `n_threads` CPU threads (default: one per core).

        Raises:
            UserError: the name is neither "embedded", a .gguf file, nor paired with a URL.
        """
        from bigloop.atoms.models.local import LocalModel
        from bigloop.atoms.models.openai_compat import OpenAIModel
        from bigloop.atoms.models.weights import (
            PACKAGED,
            TUNED,
            WITHDRAWN,
            model_path,
            tuned_adapter,
        )

        if self.base_url:
            if self.adapter:
                raise UserError("An adapter applies to a local model, not to a server's.")
            return OpenAIModel(self.name, base_url=self.base_url)
        lora = self.adapter
        if self.name in WITHDRAWN:
            raise UserError(f"--model {self.name!r}: {WITHDRAWN[self.name]}.")
        if self.name in TUNED:
            base = TUNED[self.name].base
            path = None if base == "embedded" else model_path(base)
            return LocalModel(
                path, name=self.name, lora=lora or tuned_adapter(self.name), n_threads=n_threads
            )
        if self.name == "embedded":
            return LocalModel(lora=lora, n_threads=n_threads)
        if self.name in PACKAGED:
            return LocalModel(model_path(self.name), name=self.name, lora=lora, n_threads=n_threads)
        if self.name.endswith(".gguf"):
            return LocalModel(self.name, lora=lora, n_threads=n_threads)
        raise UserError(
            f"--model {self.name!r}: use 'embedded', a .gguf file, an installable model "
            f"({', '.join(map(repr, [*PACKAGED, *TUNED]))}), or a model name with "
            "--base-url URL for an OpenAI-compatible server."
        )
