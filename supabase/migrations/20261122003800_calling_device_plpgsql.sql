-- The calling device, fast (docs/benchmarks.md, "Device credentials, before and after").
--
-- Every device-scoped request names its device through private.calling_device() or
-- private.credential_device(): once per statement in a policy, several times in a function. As
-- SQL functions with their own search_path they are never inlined, and PostgreSQL plans a SQL
-- function's body afresh in each statement that calls it, and the bodies it calls, down the chain
-- (request_credential_hash, has_trust_log, is_trusted_device, trust_epoch): 0.5 ms a call without
-- a trust log and 1.1 ms with one, which made a small sync 10-20% slower on the stack. A PL/pgSQL
-- function keeps its plans for the connection's life: the same rules, one function each, now cost
-- 0.04 ms and 0.06 ms a call (psql, 1,000 calls in a loop, on the test machine).
--
-- Nothing changes in what they answer: each is redefined with the same arguments, result,
-- volatility, owner and grants, its rule unchanged. Both schema variants get this file.

CREATE OR REPLACE FUNCTION private.request_credential_hash() RETURNS bytea
    LANGUAGE plpgsql STABLE SET search_path = '' AS $$
DECLARE
    v text := nullif(current_setting('request.headers', true), '')::json ->> 'x-device-credential';
BEGIN
    RETURN CASE WHEN v ~ '^[0-9a-f]{64}$' THEN sha256(decode(v, 'hex')) END;
END
$$;

CREATE OR REPLACE FUNCTION private.credential_device() RETURNS uuid
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = '' AS $$
DECLARE
    h bytea := private.request_credential_hash();
BEGIN
    IF h IS NULL THEN RETURN NULL; END IF;
    RETURN (SELECT c.device_id FROM private.device_credentials c
            WHERE c.hash = h AND c.user_id = auth.uid() AND c.ended_at IS NULL);
END
$$;

CREATE OR REPLACE FUNCTION private.has_trust_log(caller uuid) RETURNS boolean
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = '' AS $$
BEGIN
    RETURN EXISTS (SELECT 1 FROM private.trust_log_state s WHERE s.user_id = caller AND s.highest_epoch > 0);
END
$$;

CREATE OR REPLACE FUNCTION private.trust_epoch(caller uuid) RETURNS integer
    LANGUAGE plpgsql STABLE SET search_path = '' AS $$
BEGIN
    RETURN (SELECT CASE WHEN s.pending_epoch IS NOT NULL AND s.pending_created_at + 259200 <= floor(extract(epoch FROM now()))
                        THEN s.pending_epoch ELSE s.current_epoch END
            FROM private.trust_log_state s WHERE s.user_id = caller);
END
$$;

CREATE OR REPLACE FUNCTION private.is_trusted_device(caller uuid, device uuid) RETURNS boolean
    LANGUAGE plpgsql STABLE SET search_path = '' AS $$
DECLARE
    in_force integer := private.trust_epoch(caller);
BEGIN
    RETURN (SELECT coalesce(bool_or(d.device_id = device::text AND d.certified_seq IS NOT NULL AND d.revoked_seq IS NULL)
                            AND NOT bool_or(d.device_id = '*'), false)
            FROM private.trust_log_devices d
            WHERE d.user_id = caller AND d.epoch = in_force AND d.device_id IN (device::text, '*'));
END
$$;

CREATE OR REPLACE FUNCTION private.calling_device() RETURNS uuid
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = '' AS $$
DECLARE
    d uuid := private.credential_device();
    caller uuid := auth.uid();
BEGIN
    IF d IS NULL OR (private.has_trust_log(caller) AND NOT private.is_trusted_device(caller, d)) THEN
        RETURN NULL;
    END IF;
    RETURN d;
END
$$;
