/* Hash of RSQRTSS/RCPSS over every float in [1, 4): differs by CPU vendor/microarchitecture. */
#include <immintrin.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
int main(void) {
    uint64_t h1 = 1469598103934665603ULL, h2 = h1; float first[4];
    for (uint32_t bits = 0x3f800000u; bits < 0x40800000u; bits++) {
        float x; memcpy(&x, &bits, 4);
        float r = _mm_cvtss_f32(_mm_rsqrt_ss(_mm_set_ss(x)));
        float c = _mm_cvtss_f32(_mm_rcp_ss(_mm_set_ss(x)));
        uint32_t rb, cb; memcpy(&rb, &r, 4); memcpy(&cb, &c, 4);
        h1 = (h1 ^ rb) * 1099511628211ULL; h2 = (h2 ^ cb) * 1099511628211ULL;
        if (bits - 0x3f800000u < 4) first[bits - 0x3f800000u] = r;
    }
    printf("rsqrtss %016llx rcpss %016llx rsqrt(1..)= %a %a %a %a\n", (unsigned long long)h1,
           (unsigned long long)h2, first[0], first[1], first[2], first[3]);
    return 0;
}
