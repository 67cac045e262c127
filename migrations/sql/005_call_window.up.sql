-- The provider's in-flight window (how long a request sent may take to land) under which each
-- call attempt sent, in milliseconds: journaled with the attempt's row, and raised before a
-- request goes out under a longer one. A later attempt trusts an empty inquiry only once every
-- earlier attempt has been quiet for the longer of this and the window declared then, so a
-- provider whose declared window shrinks, or two processes configured differently, cannot make
-- a request still on its way look like no charge. NULL: none declared (0).
ALTER TABLE pgsaga_call ADD COLUMN max_in_flight_ms bigint;
