"""What the `bigloop` command line and the commands other packages add to it share:
option types (`options`) and the loop options generated from `LoopConfig`
(`config_options`). Importing this never loads the command line itself."""
