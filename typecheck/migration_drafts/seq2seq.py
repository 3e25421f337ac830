"""First draft: a seq2seq GRU encoder-decoder with Bahdanau (additive) attention in the style of
the PyTorch tutorial "NLP From Scratch: Translation with a Sequence to Sequence Network and
Attention" (EncoderRNN, BahdanauAttention, AttnDecoderRNN; teacher forcing, greedy decoding,
an encoder and a decoder optimizer, NLLLoss on log_softmax outputs), written the way a PyTorch
user writes it after skimming shapegrad's README and docs/migration.md. Random sentences."""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, Tensor
from shapegrad import nn

T = TypeVar("T")

SOS_token = 0
EOS_token = 1
MAX_LENGTH = 6


class Batch(sg.Dim): ...


class Seq(sg.Dim): ...


class EncoderRNN(nn.Module):
    def __init__(self, input_size: int, hidden_size: int, dropout_p: float = 0.1) -> None:
        self.hidden_size = hidden_size
        self.embedding = nn.Embedding[L[20], L[32]](input_size, hidden_size)
        self.gru = nn.GRU[L[32], L[32]](hidden_size, hidden_size)
        self.dropout = nn.Dropout(dropout_p)

    def __call__(
        self, input: Tensor[T, Batch, Seq]
    ) -> tuple[Tensor[T, Batch, Seq, L[32]], Tensor[T, L[1], Batch, L[32]]]:
        embedded = self.dropout(self.embedding(input))
        output, hidden = self.gru(embedded)
        return output, hidden


class BahdanauAttention(nn.Module):
    def __init__(self, hidden_size: int) -> None:
        self.Wa = nn.Linear[L[32], L[32]](hidden_size, hidden_size)
        self.Ua = nn.Linear[L[32], L[32]](hidden_size, hidden_size)
        self.Va = nn.Linear[L[32], L[1]](hidden_size, 1)

    def __call__(
        self, query: Tensor[T, Batch, L[1], L[32]], keys: Tensor[T, Batch, Seq, L[32]]
    ) -> tuple[Tensor[T, Batch, L[1], L[32]], Tensor[T, Batch, L[1], Seq]]:
        scores = self.Va((self.Wa(query) + self.Ua(keys)).tanh())
        scores = scores.squeeze(2).expand_dims(1)
        weights = scores.softmax(axis=-1)
        context = weights @ keys
        return context, weights


class AttnDecoderRNN(nn.Module):
    def __init__(self, hidden_size: int, output_size: int, dropout_p: float = 0.1) -> None:
        self.embedding = nn.Embedding[L[24], L[32]](output_size, hidden_size)
        self.attention = BahdanauAttention(hidden_size)
        self.gru = nn.GRU[L[64], L[32]](2 * hidden_size, hidden_size)
        self.out = nn.Linear[L[32], L[24]](hidden_size, output_size)
        self.dropout = nn.Dropout(dropout_p)

    def __call__(
        self,
        encoder_outputs: Tensor[T, Batch, Seq, L[32]],
        encoder_hidden: Tensor[T, L[1], Batch, L[32]],
        target_tensor: Tensor[NoTape, Batch, Seq] | None = None,
    ):
        batch_size = encoder_outputs.shape[0]
        decoder_input = sg.full((batch_size, 1), SOS_token, dtype="int64")
        decoder_hidden = encoder_hidden
        decoder_outputs = []
        attentions = []

        for i in range(MAX_LENGTH):
            decoder_output, decoder_hidden, attn_weights = self.forward_step(
                decoder_input, decoder_hidden, encoder_outputs
            )
            decoder_outputs.append(decoder_output)
            attentions.append(attn_weights)

            if target_tensor is not None:
                # teacher forcing: the next input is the target
                decoder_input = target_tensor[:, i].expand_dims(1)
            else:
                # without teacher forcing: the next input is the decoder's own prediction
                _, topi = decoder_output.topk(1)
                decoder_input = topi.squeeze(-1).detach()

        decoder_outputs = sg.concat(decoder_outputs, axis=1)
        decoder_outputs = decoder_outputs.log_softmax(axis=-1)
        attentions = sg.concat(attentions, axis=1)
        return decoder_outputs, decoder_hidden, attentions

    def forward_step(
        self,
        input: Tensor[NoTape, Batch, L[1]],
        hidden: Tensor[T, L[1], Batch, L[32]],
        encoder_outputs: Tensor[T, Batch, Seq, L[32]],
    ) -> tuple[Tensor[T, Batch, L[1], L[24]], Tensor[T, L[1], Batch, L[32]], Tensor[T, Batch, L[1], Seq]]:
        embedded = self.dropout(self.embedding(input))
        query = hidden.permute(1, 0, 2)
        context, attn_weights = self.attention(query, encoder_outputs)
        input_gru = sg.concat((embedded, context), axis=2)
        output, hidden = self.gru(input_gru, hidden)
        output = self.out(output)
        return output, hidden, attn_weights


def train_epoch(
    input_tensor: Tensor[NoTape, Batch, Seq],
    target_tensor: Tensor[NoTape, Batch, Seq],
    encoder: EncoderRNN,
    decoder: AttnDecoderRNN,
    encoder_optimizer: sg.optim.Adam[EncoderRNN],
    decoder_optimizer: sg.optim.Adam[AttnDecoderRNN],
    encoder_grads: sg.Gradients[EncoderRNN],
    decoder_grads: sg.Gradients[AttnDecoderRNN],
) -> float:
    encoder_grads.zero()
    decoder_grads.zero()

    encoder_outputs, encoder_hidden = encoder(input_tensor.trace(encoder_grads, decoder_grads))
    decoder_outputs, _, _ = decoder(encoder_outputs, encoder_hidden, target_tensor)

    loss = sg.losses.nll_loss(decoder_outputs.reshape(-1, decoder_outputs.shape[-1]), target_tensor.reshape(-1))
    loss.backward()

    encoder_optimizer.update(encoder, encoder_grads)
    decoder_optimizer.update(decoder, decoder_grads)
    return loss.item()


def main() -> None:
    sg.seed(0)
    hidden_size = 32
    input_words, output_words = 20, 24
    encoder = EncoderRNN(input_words, hidden_size)
    decoder = AttnDecoderRNN(hidden_size, output_words)
    encoder_optimizer = sg.optim.Adam(encoder, lr=0.001)
    decoder_optimizer = sg.optim.Adam(decoder, lr=0.001)
    encoder_grads = encoder.alloc_grads()
    decoder_grads = decoder.alloc_grads()

    # a batch of 4 random sentence pairs, MAX_LENGTH words each
    input_tensor = sg.randint(2, input_words, (4, MAX_LENGTH))
    target_tensor = sg.randint(2, output_words, (4, MAX_LENGTH))
    for epoch in range(2):
        loss = train_epoch(
            input_tensor, target_tensor, encoder, decoder,
            encoder_optimizer, decoder_optimizer, encoder_grads, decoder_grads,
        )
        print(f"epoch {epoch}: loss {loss:.4f}")

    # evaluate: greedy decoding, no teacher forcing
    encoder.eval()
    decoder.eval()
    encoder_outputs, encoder_hidden = encoder(input_tensor)
    decoder_outputs, _, attentions = decoder(encoder_outputs, encoder_hidden)
    decoded_ids = decoder_outputs.argmax(axis=-1)
    assert decoded_ids.shape == (4, MAX_LENGTH)
    assert attentions.shape == (4, MAX_LENGTH, MAX_LENGTH)


if __name__ == "__main__":
    main()
