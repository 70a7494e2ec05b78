"""Spark labs: experiments over many generated topologies (placement, Hazelcast's convergence, NCache's
balance by data size)."""
