"""_sha2 (SHA-224, SHA-256, SHA-384, SHA-512, FIPS 180-4) for the firmware
object on CPython 3.13, frozen in under that name.

CPython 3.13's own _sha2 is HACL*'s code, which Debian 13's
libpython3.13-pic.a lacks (its config.c names the module, its objects are not
in the archive); hashlib needs the four constructors at import and dnspython's
dns.tsig takes them at import.  A parse hashes nothing: this is for TSIG and
DNSSEC digests a program computes, exact and slow.  The round constants and
initial values are FIPS 180-4's definitions (the first bits of the fractional
parts of the primes' cube and square roots), computed at import.
"""


def _primes(n):
    found, k = [], 2
    while len(found) < n:
        if all(k % p for p in found if p * p <= k):
            found.append(k)
        k += 1
    return found


def _iroot(n, k):
    """The integer k-th root of n (floor)."""
    x = 1 << ((n.bit_length() + k - 1) // k)
    while True:
        y = ((k - 1) * x + n // x ** (k - 1)) // k
        if y >= x:
            return x
        x = y


def _fractions(primes, root, bits):
    """The first bits bits of the fractional parts of the primes' roots."""
    return [_iroot(p << (root * bits), root) % (1 << bits) for p in primes]


_P = _primes(80)
_K256 = _fractions(_P[:64], 3, 32)
_K512 = _fractions(_P, 3, 64)
_IV = {
    "sha256": _fractions(_P[:8], 2, 32),
    "sha224": [v & 0xFFFFFFFF for v in _fractions(_P[8:16], 2, 64)],
    "sha512": _fractions(_P[:8], 2, 64),
    "sha384": _fractions(_P[8:16], 2, 64),
}
_SPEC = {  # word bits, rounds, constants, block, digest, Σ0 Σ1 σ0 σ1 rotations
    "sha224": (32, 64, _K256, 64, 28, (2, 13, 22), (6, 11, 25), (7, 18, 3), (17, 19, 10)),
    "sha256": (32, 64, _K256, 64, 32, (2, 13, 22), (6, 11, 25), (7, 18, 3), (17, 19, 10)),
    "sha384": (64, 80, _K512, 128, 48, (28, 34, 39), (14, 18, 41), (1, 8, 7), (19, 61, 6)),
    "sha512": (64, 80, _K512, 128, 64, (28, 34, 39), (14, 18, 41), (1, 8, 7), (19, 61, 6)),
}


def _bytes(data):
    if isinstance(data, str):
        raise TypeError("Strings must be encoded before hashing")
    return memoryview(data).tobytes()


class _Hash:
    def __init__(self, name, data=b""):
        self.name = name
        (self._bits, self._rounds, self._k, self.block_size, self.digest_size,
         self._s0, self._s1, self._g0, self._g1) = _SPEC[name]
        self._mask = (1 << self._bits) - 1
        self._h = list(_IV[name])
        self._pending = b""
        self._length = 0
        if data:
            self.update(data)

    def _rotr(self, x, n):
        return ((x >> n) | (x << (self._bits - n))) & self._mask

    def _compress(self, block):
        size, mask, rotr = self._bits // 8, self._mask, self._rotr
        w = [int.from_bytes(block[i:i + size], "big") for i in range(0, 16 * size, size)]
        (a0, a1, a2), (b0, b1, b2) = self._g0, self._g1
        for t in range(16, self._rounds):
            x, y = w[t - 15], w[t - 2]
            w.append((w[t - 16] + (rotr(x, a0) ^ rotr(x, a1) ^ (x >> a2)) + w[t - 7] +
                      (rotr(y, b0) ^ rotr(y, b1) ^ (y >> b2))) & mask)
        a, b, c, d, e, f, g, h = self._h
        (s0, s1, s2), (e0, e1, e2) = self._s0, self._s1
        for t in range(self._rounds):
            t1 = (h + (rotr(e, e0) ^ rotr(e, e1) ^ rotr(e, e2)) + ((e & f) ^ (~e & g)) +
                  self._k[t] + w[t]) & mask
            t2 = ((rotr(a, s0) ^ rotr(a, s1) ^ rotr(a, s2)) + ((a & b) ^ (a & c) ^ (b & c))) & mask
            a, b, c, d, e, f, g, h = (t1 + t2) & mask, a, b, c, (d + t1) & mask, e, f, g
        self._h = [(x + y) & mask for x, y in zip(self._h, (a, b, c, d, e, f, g, h))]

    def update(self, data):
        data = self._pending + _bytes(data)
        self._length += len(data) - len(self._pending)
        full = len(data) - len(data) % self.block_size
        for i in range(0, full, self.block_size):
            self._compress(data[i:i + self.block_size])
        self._pending = data[full:]

    def copy(self):
        other = _Hash.__new__(_Hash)
        other.__dict__.update(self.__dict__)
        other._h = list(self._h)
        return other

    def digest(self):
        final = self.copy()
        length_size = 2 * final._bits // 8
        tail = b"\x80" + b"\x00" * ((-(len(final._pending) + 1 + length_size)) % self.block_size)
        tail += (self._length * 8).to_bytes(length_size, "big")
        final._pending += tail
        for i in range(0, len(final._pending), self.block_size):
            final._compress(final._pending[i:i + self.block_size])
        size = final._bits // 8
        return b"".join(v.to_bytes(size, "big") for v in final._h)[:self.digest_size]

    def hexdigest(self):
        return self.digest().hex()


def _constructor(name):
    def new(data=b"", *, usedforsecurity=True, string=None):
        if string is not None:
            if data:
                raise TypeError("'data' and 'string' are mutually exclusive and support "
                                "for 'string' keyword parameter is slated for removal in a "
                                "future version.")
            data = string
        return _Hash(name, data)
    new.__name__ = new.__qualname__ = name
    return new


sha224 = _constructor("sha224")
sha256 = _constructor("sha256")
sha384 = _constructor("sha384")
sha512 = _constructor("sha512")
