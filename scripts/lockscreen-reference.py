#!/usr/bin/python3
"""Independent implementation of the lock-screen sanitiser of docs/notifications.md
("## The lock-screen sanitiser"), written from the prose only.

Usage:
  lockscreen-reference.py check FILE          run a Wycheproof-layout vector file, print disagreements
  lockscreen-reference.py gen N OUT [SEED]    write N random inputs with this implementation's outputs
"""
import json
import random
import re
import sys
import unicodedata

# ---------------------------------------------------------------- character classes
WHITE_SPACE = set([*range(0x09, 0x0E), 0x20, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B),
                   0x2028, 0x2029, 0x202F, 0x205F, 0x3000])
S = ''.join(re.escape(chr(c)) for c in sorted(WHITE_SPACE))  # \s, contents of a class
WS = '[' + S + ']'
NS = '[^' + S + ']'
WINDOW = 800

CONFUSABLES = {
    # Cyrillic, Greek
    0x0430: 'a', 0x0410: 'A', 0x03B1: 'a', 0x0391: 'A',
    0x0412: 'B', 0x0392: 'B',
    0x0441: 'c', 0x0421: 'C',
    0x0501: 'd',
    0x0435: 'e', 0x0415: 'E', 0x0395: 'E',
    0x04BB: 'h', 0x041D: 'H', 0x0397: 'H',
    0x0456: 'i', 0x0406: 'I', 0x03B9: 'i', 0x0399: 'I',
    0x0458: 'j', 0x0408: 'J',
    0x041A: 'K', 0x039A: 'K',
    0x04CF: 'l',
    0x041C: 'M', 0x039C: 'M',
    0x039D: 'N',
    0x043E: 'o', 0x041E: 'O', 0x03BF: 'o', 0x039F: 'O',
    0x0440: 'p', 0x0420: 'P', 0x03C1: 'p', 0x03A1: 'P',
    0x051B: 'q', 0x051A: 'Q',
    0x0455: 's', 0x0405: 'S',
    0x0422: 'T', 0x03A4: 'T',
    0x03BD: 'v',
    0x051D: 'w', 0x051C: 'W',
    0x0445: 'x', 0x0425: 'X', 0x03A7: 'X',
    0x0443: 'y', 0x04AE: 'Y', 0x03A5: 'Y',
    0x0396: 'Z',
    # Armenian (the docs' table, row by row)
    0x0584: 'f', 0x0581: 'g', 0x0570: 'h', 0x0578: 'n', 0x057C: 'n', 0x0585: 'o', 0x0555: 'O',
    0x0563: 'q', 0x0566: 'q', 0x054F: 'S', 0x057D: 'u', 0x054D: 'U', 0x0561: 'w',
    # Cherokee
    0x13AA: 'A', 0x13CF: 'b', 0x13F4: 'B', 0x13DF: 'C', 0x13E7: 'd', 0x13A0: 'D', 0x13AC: 'E',
    0x13C0: 'G', 0x13F3: 'G', 0x13C2: 'h', 0x13BB: 'H', 0x13A5: 'i', 0x13AB: 'J', 0x13E6: 'K',
    0x13DE: 'L', 0x13B7: 'M', 0x13E2: 'P', 0x13A1: 'R', 0x13D2: 'R', 0x13D5: 'S', 0x13DA: 'S',
    0x13A2: 'T', 0x13D9: 'V', 0x13B3: 'W', 0x13D4: 'W', 0x13A9: 'Y', 0x13BD: 'Y', 0x13C3: 'Z',
    # other
    0x1D04: 'c', 0x0131: 'i', 0x0130: 'I', 0x1D0F: 'o', 0x1D1C: 'u', 0x1D20: 'v', 0x1D21: 'w', 0x1D22: 'z',
    0x0589: ':', 0x02D0: ':', 0x02F8: ':', 0x05C3: ':', 0x0703: ':', 0x0704: ':', 0x0903: ':', 0x0A83: ':',
    0x16EC: ':', 0x1803: ':', 0x1809: ':', 0x205A: ':', 0x2236: ':', 0xA4FD: ':', 0xA789: ':',
    0x1400: '=', 0x2E40: '=', 0x30A0: '=', 0xA4FF: '=', 0xA78A: '=',
}

# Default_Ignorable_Code_Point as of Unicode 15.1 (docs/notifications.md lists the same ranges).
INVISIBLE = [(0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160), (0x17B4, 0x17B5),
             (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F), (0x3164, 0x3164),
             (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3),
             (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF)]


def is_hidden(ch):
    c = unicodedata.category(ch)
    cp = ord(ch)
    return c in ('Cc', 'Cf') or ch in '\u2028\u2029' or any(a <= cp <= b for a, b in INVISIBLE)


def matching_form(text, idxs):
    """text scalars at original indices idxs -> (matching string, original index per scalar)."""
    chars, owners = [], []
    for i in idxs:
        for c in unicodedata.normalize('NFKC', text[i]):
            chars.append(CONFUSABLES.get(ord(c), c))
            owners.append(i)
    return ''.join(chars), owners


def lower(s):
    """ASCII letters only, as the docs say."""
    return ''.join(chr(ord(c) + 32) if 'A' <= c <= 'Z' else c for c in s)


# ---------------------------------------------------------------- the rules
KEYWORDS = ['password', 'passwd', 'pwd', 'passphrase', 'secret', 'token', 'credential', 'credentials', 'apikey',
            'accesskey', 'privatekey', 'auth', 'authorization', 'cookie']
SCHEMES = {'basic', 'bearer', 'token', 'digest', 'negotiate'}
IDENT = re.compile(r'[A-Za-z0-9_.-]+')
COMPONENT = re.compile(r'[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+')
SEP_TAIL = re.compile(r'["\'`]?' + WS + r'*(=|:|%3[AaDd])[:=>]*' + WS + r'*')
WORD = re.compile(NS + '+')
NEXT_WORD = re.compile(WS + '+(' + NS + '+)')
OPTION_GAP = re.compile(WS + '+')
USER_OPTION = re.compile(r'(?<![A-Za-z0-9_.-])(-u|-U|--user|--proxy-user)(?![A-Za-z0-9_.-])(=|' + WS + '+)(' + NS + '+)')
MYSQL = re.compile(r'(?<![A-Za-z0-9_.-])(mysql|mariadb)[A-Za-z0-9_.-]*', re.I | re.A)
MYSQL_P = re.compile(r'(?<!' + NS + r')-p' + NS + '+')
BEARER = re.compile(r'bearer' + WS + '+' + NS + '+', re.I | re.A)
COMMIT_CONTEXT = re.compile(
    r'(?<![A-Za-z0-9_.-])(commit|checkout|revert|cherry-pick|rebase|reset|sha|sha1|head|show|merge|fixup|squash)'
    r'(' + WS + '+-' + NS + r'*)*[' + S + r""":=#(\['"`]*\Z""", re.I | re.A)
ANCHORED = [
    re.compile(r'sess_[A-Za-z0-9_-]{43}'),
    re.compile(r'eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*'),
    re.compile(r'-----BEGIN [A-Z ]*PRIVATE KEY[A-Z ]*-----'),
    re.compile(r'gh[pousr]_[A-Za-z0-9]{36,}'),
    re.compile(r'github_pat_[A-Za-z0-9_]{22,}'),
    re.compile(r'[rs]k_(live|test)_[A-Za-z0-9]{16,}'),
    re.compile(r'(AKIA|ASIA)[A-Z0-9]{16}'),
    re.compile(r'xox[abposr]-[A-Za-z0-9-]{10,}'),
    re.compile(r'AIza[A-Za-z0-9_-]{35}'),
    re.compile(r'npm_[A-Za-z0-9]{36}'),
    re.compile(r'glpat-[A-Za-z0-9_-]{20,}'),
    re.compile(r'SK[0-9a-f]{32}'),
    re.compile(r'(?<![A-Za-z0-9_-])sk-(proj|ant)-[A-Za-z0-9_-]{20,}'),
    re.compile(r'(?<![A-Za-z0-9_-])sk-[A-Za-z0-9_-]{32,}'),
    BEARER,
]


def components(ident):
    return [lower(c) for part in re.split(r'[_.-]', ident) for c in COMPONENT.findall(part)]


def strength(ident):
    """'strong', 'weak' or None."""
    comps = components(ident)
    parts = [lower(p) for p in re.split(r'[_.-]', ident) if p]
    for k, c in enumerate(comps):
        if k + 1 < len(comps) and comps[k + 1] == 'key' and any(c.endswith(w) for w in ('api', 'access', 'private')):
            return 'strong'
    if any(c.endswith(w) for c in comps + parts for w in KEYWORDS):
        return 'strong'
    return 'weak' if any(c.endswith('pass') for c in comps + parts) else None


def value_end(view, v):
    if v >= len(view):
        return None
    if view[v] in '"\'`':
        close = view.find(view[v], v + 1)
        close = len(view) if close < 0 else close
        return close if close > v + 1 else None
    w = WORD.match(view, v)
    end = w.end()
    if lower(w.group()) in SCHEMES:
        nxt = NEXT_WORD.match(view, end)
        if nxt:
            end = nxt.end()
    while view[end - 1] == ';':
        nxt = NEXT_WORD.match(view, end)
        if not nxt:
            break
        end = nxt.end()
    return end


def commit_id(view, a, b):
    run = view[a:b]
    return 7 <= len(run) <= 40 and re.fullmatch(r'[0-9A-Fa-f]+', run) and COMMIT_CONTEXT.search(view, 0, a)


def is_path(run):
    return '/' in run and '+' not in run and not (re.search('[A-Z]', run) and re.search('[a-z]', run)
                                                 and re.search('[0-9]', run))


def ranges(view):
    """Every rule's matches in one view, as (start, end)."""
    out = []
    for m in IDENT.finditer(view):
        st = strength(m.group())
        if st:
            tail = SEP_TAIL.match(view, m.end())
            if tail and (st == 'strong' or tail.group(1) in ('=', '%3D', '%3d')):
                e = value_end(view, tail.end())
                if e:
                    out.append((m.start(), e))
            gap = OPTION_GAP.match(view, m.end())
            if m.group().startswith('-') and gap:
                e = value_end(view, gap.end())
                if e:
                    out.append((m.start(), e))
    for m in USER_OPTION.finditer(view):
        if ':' in m.group(3):
            out.append((m.start(), m.end()))
    first = MYSQL.search(view)
    if first:
        out += [(m.start(), m.end()) for m in MYSQL_P.finditer(view, first.end())]
    for m in re.finditer(r'://', view):
        w = WORD.match(view, m.end())
        if w:
            at = w.group().rfind('@')
            if at > 0 and not re.search(r'[/?#]', w.group()[:at].split(':')[0]):
                out.append((w.start(), w.start() + at))
    for m in re.finditer(r'[A-Za-z0-9+/]+', view):
        if len(m.group()) >= 40 and not commit_id(view, m.start(), m.end()) and not is_path(m.group()):
            pad = re.compile('={0,2}').match(view, m.end())
            out.append((m.start(), pad.end()))
    for m in re.finditer(r'[A-Za-z0-9_]+', view):
        if re.fullmatch(r'[0-9A-Fa-f]{32}', m.group()) and not commit_id(view, m.start(), m.end()):
            out.append((m.start(), m.end()))
    for pat in ANCHORED:
        for pos in range(len(view)):
            m = pat.match(view, pos)
            if m:
                out.append((m.start(), m.end()))
    return out


def marks_for(text):
    marked = [False] * len(text)
    view_a = [i for i, ch in enumerate(text) if not (is_hidden(ch) and ord(ch) not in WHITE_SPACE)]
    view_b = [i for i, ch in enumerate(text) if not is_hidden(ch)]
    for idxs in (view_a, view_b):
        view, owners = matching_form(text, idxs)
        for a, b in ranges(view):
            for k in range(a, b):
                marked[owners[k]] = True
    return marked


# ---------------------------------------------------------------- grapheme clusters (UAX #29 subset)
SPACING_MARK_NOT = set([0x102B, 0x102C, 0x1038, 0x1062, 0x1063, 0x1064, *range(0x1067, 0x106E), 0x1083,
                        *range(0x1087, 0x108D), 0x108F, 0x109A, 0x109B, 0x109C, 0x1A61, 0x1A63, 0x1A64,
                        0xAA7B, 0xAA7D, 0x11720, 0x11721])
PREPEND = set([0x0D4E, 0x111C2, 0x111C3, 0x1193F, 0x11941, 0x11A3A, *range(0x11A84, 0x11A8A), 0x11D46])


def gcb(ch):
    cp = ord(ch)
    cat = unicodedata.category(ch)
    if cp == 0x0D:
        return 'CR'
    if cp == 0x0A:
        return 'LF'
    if cp == 0x200D:
        return 'ZWJ'
    if cat in ('Mn', 'Me') or 0x1F3FB <= cp <= 0x1F3FF or cp in (0x200C, 0xFF9E, 0xFF9F) \
            or 0xE0020 <= cp <= 0xE007F:
        return 'Extend'
    if cat in ('Cc', 'Zl', 'Zp') or (cat == 'Cf' and cp not in (0x0600, 0x0601, 0x0602, 0x0603, 0x0604, 0x0605,
                                                                    0x06DD, 0x070F, 0x0890, 0x0891, 0x08E2,
                                                                    0x110BD, 0x110CD)):
        return 'Control'
    if 0x1F1E6 <= cp <= 0x1F1FF:
        return 'RI'
    if cat == 'Cf' or cp in PREPEND:
        return 'Prepend'
    if (cat == 'Mc' and cp not in SPACING_MARK_NOT) or cp in (0x0E33, 0x0EB3):
        return 'SpacingMark'
    if 0x1100 <= cp <= 0x115F or 0xA960 <= cp <= 0xA97C:
        return 'L'
    if 0x1160 <= cp <= 0x11A7 or 0xD7B0 <= cp <= 0xD7C6:
        return 'V'
    if 0x11A8 <= cp <= 0x11FF or 0xD7CB <= cp <= 0xD7FB:
        return 'T'
    if 0xAC00 <= cp <= 0xD7A3:
        return 'LV' if (cp - 0xAC00) % 28 == 0 else 'LVT'
    return 'Other'


def is_ext_pict(ch):
    cp = ord(ch)
    return (0x1F000 <= cp <= 0x1FAFF and not (0x1F1E6 <= cp <= 0x1F1FF) and not (0x1F3FB <= cp <= 0x1F3FF)) \
        or 0x2600 <= cp <= 0x27BF or cp in (0xA9, 0xAE, 0x203C, 0x2049, 0x2122, 0x2139)


def grapheme_boundaries(s):
    """Indices (0..len) where an extended grapheme cluster boundary falls."""
    n = len(s)
    if n == 0:
        return [0]
    props = [gcb(c) for c in s]
    b = [0]
    ri_run = 1 if props[0] == 'RI' else 0
    # state for GB11: saw ExtPict Extend* (ZWJ)?
    pict_state = is_ext_pict(s[0])
    for i in range(1, n):
        p, q = props[i - 1], props[i]
        brk = True
        if p == 'CR' and q == 'LF':
            brk = False
        elif p in ('Control', 'CR', 'LF') or q in ('Control', 'CR', 'LF'):
            brk = True
        elif p == 'L' and q in ('L', 'V', 'LV', 'LVT'):
            brk = False
        elif p in ('LV', 'V') and q in ('V', 'T'):
            brk = False
        elif p in ('LVT', 'T') and q == 'T':
            brk = False
        elif q in ('Extend', 'ZWJ', 'SpacingMark'):
            brk = False
        elif p == 'Prepend':
            brk = False
        elif p == 'ZWJ' and pict_state and is_ext_pict(s[i]):
            brk = False
        elif p == 'RI' and q == 'RI' and ri_run % 2 == 1:
            brk = False
        if brk:
            b.append(i)
        # update states
        ri_run = ri_run + 1 if q == 'RI' else 0
        if is_ext_pict(s[i]):
            pict_state = True
        elif q == 'Extend' and pict_state:
            pass
        elif q == 'ZWJ' and pict_state:
            pass
        else:
            pict_state = False
    b.append(n)
    return b


def cut(s, limit=200):
    if len(s) <= limit:
        return s
    best = 0
    for k in grapheme_boundaries(s):
        if k <= limit:
            best = k
    return s[:best]


# ---------------------------------------------------------------- the sanitiser
def sanitise(text):
    longer = len(text) > WINDOW
    text = text[:WINDOW]
    marked = marks_for(text)
    if longer:
        visible = [i for i, ch in enumerate(text) if ord(ch) in WHITE_SPACE and not is_hidden(ch)]
        for i in range((visible[-1] + 1) if visible else 0, len(text)):
            marked[i] = True
    out = []
    in_run = False
    for i, ch in enumerate(text):
        if marked[i]:
            if not in_run:
                out.append('[REDACTED]')
                in_run = True
        elif is_hidden(ch):
            pass                      # hidden: goes, and does not end a run
        else:
            in_run = False
            out.append(ch)
    return cut(''.join(out))


# ---------------------------------------------------------------- vectors
def check(path):
    d = json.load(open(path, encoding='utf-8'))
    bad = []
    total = 0
    for g in d['testGroups']:
        for t in g['tests']:
            total += 1
            got = sanitise(t['input'])
            if got != t['output']:
                bad.append(t['tcId'])
                print('tcId %d (%s)\n  input    %s\n  expected %s\n  python   %s' % (
                    t['tcId'], t['comment'], ascii(t['input']), ascii(t['output']), ascii(got)))
    print('%d tests, %d disagree: %s' % (total, len(bad), bad))
    return bad


B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'
B64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-'
ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'
UPNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789'
HIDDEN = ['\ufe0f', '\u034f', '\u3164', '\u2065', '\u200b', '\u200c', '\u200d', '\u00ad', '\ufeff', '\u202e', '\u2066', '\u2069', '\u2060',
          '\U000e0041', '\u0000', '\u0007', '\t', '\n', '\u0085', '\u2028', '\u2029']
LOOKALIKE_OF = {}
for _cp, _a in CONFUSABLES.items():
    LOOKALIKE_OF.setdefault(_a, []).append(chr(_cp))
WORDS = ['deploy', 'build', 'ok', 'the', 'key', 'is', 'Running', 'tests', 'done', 'café', 'naïve', '日本語',
         'Привет', 'to', 'api', 'pass', 'word', 'sess', 'AKIA', 'x', '=', ':', '"', "'", '.', '-', '_', '@',
         '://', '/', '+', '==', 'bear', 'er', 'tok', 'en', 'eyJ', '-----', 'ſecret', 'İ', 'ı', 'PASS', 'k']


def rs(alpha, n, rng):
    return ''.join(rng.choice(alpha) for _ in range(n))


def mixcase(s, rng):
    return ''.join(c.upper() if rng.random() < 0.4 else c for c in s)


HEX = '0123456789abcdef'
IDENTS = ['DB_PASSWORD', 'myPassword', 'secret_key_base', 'PASS', 'pass', 'passed', 'tokens', 'X-Api-Key',
          'accessToken', 'PassWord', 'SeCrEt', 'pwd', 'auth', 'Authorization', 'Cookie', '--password', '--pass',
          'max_tokens', 'DBPassword', 'password2', 'bypass', 'session', 'author', 'api_key', 'private_key',
          'access.key', 'passphrase', 'credentials', 'x', '-token', 'OAuth', 'Tokenizer', 'APIKey', 'apiKEY']
SEPS = ['=', ':', ' : ', ' = ', '%3D', '%3a', '%3d', ':=', ' => ', '\u2236', '\ua789', '\u02d0', '\ua78a', '\u30a0',
        '', ' ', '"=', "':", '==', '\t', '\n:', '%3', '%3Dx']
VALUES = ['hunter2', '"a b c"', "'x y'", '"unclosed value', 'Basic dXNlcjpw', 'Bearer abc.def', 'token x', 'a=1; b=2',
          'a; b;', '"', '""', 'p@ss/w#rd?', '-', ';', 'x;', 'Digest  u', 'basic']
NEW_KINDS = 11


def new_piece(rng, k):
    if k == 0:
        return rng.choice(IDENTS) + rng.choice(SEPS) + rng.choice(VALUES)
    if k == 1:
        return rng.choice(['--password', '--token', '--pass', '--passes', '-password', '--token-file', '--secret']) + \
            rng.choice([' ', '  ', '=', '\t', '']) + rng.choice(VALUES)
    if k == 2:
        return rng.choice(['curl ', 'git push ', 'docker run ', '']) + rng.choice(['-u', '-U', '--user', '--proxy-user', '-uu', 'x-u']) + \
            rng.choice([' ', '=', '  ', '']) + rng.choice(['bob:pw', 'origin', 'a:', ':b', '1000:1000', '"u:p q"'])
    if k == 3:
        return rng.choice(['mysql', 'MySQLdump', 'mariadb-dump', 'mysqlx', 'psql', '/usr/bin/mysql', 'xmysql']) + \
            rng.choice([' -u root', '', ' -h db']) + rng.choice([' -phunter2', ' -p', ' -p ', '-pX', ' -P3306', ' x-py'])
    if k == 4:
        user = rng.choice(['bob', 'bob:pw', ':tok', 'a/b', 'bob:p/w#x?y', 'u:p@q', 'x?y', 'host:8080/p', ''])
        return rng.choice(['https://', 'git+ssh://', '://']) + user + rng.choice(['@host', '@h/x@y', '', '@']) + \
            rng.choice(['', '/path', ' next'])
    if k == 5:
        body = rs(B64URL, rng.randrange(15, 40), rng)
        return rng.choice(['', ' ', 'x', 'ri', '-', '_', '=']) + rng.choice(['sk-proj-', 'sk-ant-api03-', 'sk-', 'sk_']) + body
    if k == 6:
        prefix, alpha, lo, hi = rng.choice([('AIza', B64URL, 33, 38), ('npm_', ALNUM, 34, 38), ('glpat-', B64URL, 18, 23),
                                            ('SK', HEX, 30, 35), ('SK', HEX.upper(), 31, 33)])
        return prefix + rs(alpha, rng.randrange(lo, hi), rng)
    if k == 7:
        return rng.choice(['', ' ', '-', '_', 'x', '/']) + rs(HEX + rng.choice(['', 'ABCDEF']), rng.randrange(30, 35), rng) + \
            rng.choice(['', ' ', '_', '-', 'g'])
    if k == 8:
        ctx = rng.choice(['commit ', 'git reset --hard ', 'HEAD: ', 'sha=', 'cherry-pick -x ', 'commits ', 'got ',
                          'Merge: ', 'revert "', 'checkout -b x ', 'show\t', 'SHA1 #', 'git show -s --oneline '])
        return ctx + rs(HEX + rng.choice(['', 'ABCDEF']), rng.choice([7, 12, 32, 39, 40, 41, 64]), rng) + \
            rng.choice(['', ' ', ':x', 'g', '+'])
    if k == 9:
        segs = [rs(rng.choice(['abcdefghijklmnop', 'ABCDEFabcdef', 'abc123', B64]), rng.randrange(1, 12), rng)
                for _ in range(rng.randrange(2, 8))]
        return rng.choice(['', '/', './']) + '/'.join(segs)
    return '-----BEGIN ' + rng.choice(['PGP ', 'OPENSSH ', '', 'ENCRYPTED ']) + rng.choice(['PRIVATE KEY', 'PUBLIC KEY']) + \
        rng.choice([' BLOCK', '', ' X']) + '-' * rng.randrange(4, 6)


def piece(rng):
    k = rng.randrange(17 + NEW_KINDS)
    if k >= 17:
        return new_piece(rng, k - 17)
    if k == 0:
        kw = rng.choice(['api_key', 'api-key', 'apikey', 'api key', 'token', 'secret', 'password', 'credential',
                         'passwd', 'tokn'])
        sep = rng.choice(['=', ':', ' = ', ' : ', '\u00a0=\u00a0', '', ' ', '\t:', ':\n', '=\u2028'])
        q = rng.choice(['', '', '"', "'", '`'])
        kq = rng.choice(['', '', '', '"', "'", '`'])
        val = rs(ALNUM + '-_.+é\u0301', rng.randrange(0, 12), rng)
        return mixcase(kw, rng) + kq + sep + q + val + (q if rng.random() < 0.5 else '')
    if k == 1:
        return mixcase('bearer', rng) + rng.choice([' ', '  ', '\t', '\n', '\u2028', '', '\u00a0', '\u0085']) + \
            rs(ALNUM + '-_.', rng.randrange(0, 15), rng)
    if k == 2:
        return rs(B64, rng.randrange(35, 46), rng) + '=' * rng.randrange(0, 4)
    if k == 3:
        return rng.choice(['sess_', 'SESS_', 'sess-', 'ses_']) + rs(B64URL, rng.randrange(40, 46), rng)
    if k == 4:
        return 'eyJ' + rs(B64URL, rng.randrange(0, 12), rng) + rng.choice(['.', '', '..']) + \
            rs(B64URL, rng.randrange(0, 12), rng) + rng.choice(['.', '', '.']) + rs(B64URL, rng.randrange(0, 8), rng)
    if k == 5:
        return '-----BEGIN ' + rng.choice(['', 'RSA ', 'EC ', 'OPENSSH ', 'rsa ', 'DSA2 ']) + \
            rng.choice(['PRIVATE KEY', 'PUBLIC KEY', 'PRIVATE  KEY']) + '-' * rng.randrange(3, 6)
    if k == 6:
        return rng.choice(['ghp_', 'gho_', 'ghu_', 'ghs_', 'ghr_', 'ghx_', 'GHP_']) + rs(ALNUM, rng.randrange(33, 40), rng)
    if k == 7:
        return 'github_pat_' + rs(ALNUM + '_', rng.randrange(19, 26), rng)
    if k == 8:
        return rng.choice(['sk', 'rk', 'pk', 'SK']) + rng.choice(['_live_', '_test_', '_prod_']) + \
            rs(ALNUM, rng.randrange(13, 20), rng)
    if k == 9:
        return rng.choice(['AKIA', 'ASIA', 'AKIB', 'akia']) + rs(UPNUM + 'ab', rng.randrange(14, 19), rng)
    if k == 10:
        return 'xox' + rng.choice('abposrz') + '-' + rs(ALNUM + '-', rng.randrange(7, 14), rng)
    if k == 11:
        ui = rng.choice(['', 'user@', 'user:hunter2@', 'de ploy@', 'a/b@', 'x?y@', 'u:p:q@', '@', 'tok#en@'])
        return rng.choice(['https://', 'http://', 'git+ssh://', 'https:/', '://']) + ui + \
            rng.choice(['github.com', 'host', 'example.com/a@b', 'h.io/x?q=1@2'])
    if k == 12:
        return rs('abcxyz.', rng.randrange(1, 8), rng) + '@' + rng.choice(['example.com', 'host', 'x.y'])
    if k == 13:
        return rng.choice(['\U0001f44d\U0001f3fd', '\U0001f1eb\U0001f1f7', '\U0001f600', 'e\u0301', '\u0301'])
    return rng.choice(WORDS)


def perturb(s, rng):
    """fullwidth forms, look-alikes, hidden characters and combining marks inside a piece."""
    out = []
    p_fw = rng.choice([0, 0, 0.05, 0.3])
    p_la = rng.choice([0, 0, 0.05, 0.3])
    p_hid = rng.choice([0, 0, 0.03, 0.1])
    for c in s:
        r = rng.random()
        if r < p_fw and '\u0021' <= c <= '\u007e':
            c = chr(ord(c) + 0xFEE0)
        elif r < p_fw + p_la and c in LOOKALIKE_OF:
            c = rng.choice(LOOKALIKE_OF[c])
        out.append(c)
        if rng.random() < p_hid:
            out.append(rng.choice(HIDDEN))
        if rng.random() < 0.005:
            out.append('\u0301')
    return ''.join(out)


def gen_input(rng, long=False, window=False):
    parts = []
    if window:                        # around the window's end: a long value, then pieces
        parts.append(rng.choice(['token=', 'a ', '\u200b' * rng.randrange(0, 400)]) + 'x' * rng.randrange(300, 790))
    target = rng.randrange(780, 900) if window else rng.randrange(150, 320) if long else rng.randrange(1, 6)
    while (sum(len(p) for p in parts) < target) if long or window else (len(parts) < target):
        parts.append(perturb(piece(rng), rng))
        parts.append(rng.choice(['', ' ', ' ', '  ', rng.choice(HIDDEN), ' ' + rng.choice(WORDS) + ' ', '\u0301']))
    return ''.join(parts)


def gen(n, out, seed=1):
    rng = random.Random(seed)
    tests = []
    for i in range(n):
        inp = gen_input(rng, long=(i % 10 == 9), window=(i % 20 == 4))
        tests.append({'tcId': i + 1, 'comment': 'random %d' % (i + 1), 'flags': ['Random'],
                      'input': inp, 'output': sanitise(inp), 'result': 'valid'})
    d = {'algorithm': 'UNBOUND-LOCKSCREEN-SANITISER-V2',
         'header': ['Random inputs; outputs from scripts/lockscreen-reference.py (independent Python implementation).'],
         'numberOfTests': n,
         'testGroups': [{'type': 'LockScreenSanitiser', 'tests': tests}]}
    json.dump(d, open(out, 'w', encoding='utf-8'), ensure_ascii=False, indent=1)


if __name__ == '__main__':
    if sys.argv[1] == 'check':
        sys.exit(1 if check(sys.argv[2]) else 0)
    elif sys.argv[1] == 'gen':
        gen(int(sys.argv[2]), sys.argv[3], int(sys.argv[4]) if len(sys.argv) > 4 else 1)

