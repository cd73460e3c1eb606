"""The node agent: NVML GPU sampler, host sampler, kernel- and training-log tailers.

`ingest.agent.run.Agent` runs them and publishes through a `Producer`; `AgentSettings`
(`ingest.agent.settings`) configures it from TG_AGENT_* environment variables.
"""
