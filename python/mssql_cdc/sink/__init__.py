"""The Delta sink `delta_sink`: bronze append first, then one facts commit per batch."""
