"""Closed-loop fine-tuning: the loop's verified turns become a LoRA adapter for its model.

- `turns`: a training example is one model turn exactly as the loop prompts it at run
  time (`to_plain_chat`: system prompt, tool schemas, history) and the reply it should
  have written (`render_call_reply`), captured by running the real `Loop`.
- `train`: a LoRA adapter trained with peft + transformers on the weights of the model's
  own GGUF (dequantized), on the CPU by default; checkpointed, so a killed run resumes.
- `export`: the adapter as a GGUF LoRA, which llama.cpp applies over the quantized
  model (`LocalModel(lora=...)`, `LoopConfig.adapter`).

The optimizer's `finetune` step ties them together (`bigloop optimize --step finetune`).
Needs the `train` extra (peft, gguf); `make setup` installs it.
"""
